"""Services as a library user builds them: ``memory://``, a fake clock, pinned randomness.

Every test here calls the use cases the way a Python program does
(``asyncio.run(services.notifications.create(account, NewNotification(...)))``
for the async ones, which check icons), with no HTTP and no credentials, and
reads what was stored back through the services.
The only stand-ins are ports: the clock, the randomness, the icon check and,
where a test needs deliveries to happen, a scripted gateway under a real
engine (:class:`Deliveries`).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from pushcore import (
    Device,
    NewDevice,
    NewNotification,
    Platform,
    Services,
    build_engine,
    build_services,
    load_settings,
)

# What create() returns; pushcore does not re-export it.
from pushcore.domain.model import Notification
from tests.fakes.clock import FakeClock
from tests.fakes.gateway import ScriptedGateway
from tests.fakes.icons import FakeIconProbe

ALICE = "alice"
BOB = "bob"
CAROL = "carol"
T0 = datetime(2026, 11, 21, 10, 0, 0, tzinfo=UTC)  # where FakeClock starts
DUE = T0 + timedelta(seconds=5)  # due time of a notification created at T0 with no delay given


class SeededRandom:
    """The Random port, reproducible: the same seed draws the same keys and codes."""

    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)

    def randbelow(self, n: int) -> int:
        """A uniform integer in ``[0, n)`` from the seeded generator."""
        return self._random.randrange(n)


class ScriptedRandom:
    """The Random port answering from a list (each value taken modulo ``n``), then seeded."""

    def __init__(self, values: Sequence[int], seed: int = 0) -> None:
        self._values = list(values)
        self._after = SeededRandom(seed)

    def randbelow(self, n: int) -> int:
        """The next scripted value (mod ``n``); seeded draws once the script is used up."""
        if self._values:
            return self._values.pop(0) % n
        return self._after.randbelow(n)


@pytest.fixture
def clock() -> FakeClock:
    """The services' clock: starts at :data:`T0` and moves only when a test moves it."""
    return FakeClock(T0)


@pytest.fixture
def icons() -> FakeIconProbe:
    """Icon check: URLs ending in .png or .jpg pass, the rest are refused."""
    return FakeIconProbe()


def make_services(tmp_path: Path, clock: FakeClock, icons: FakeIconProbe, **ports: Any) -> Services:
    """Services on ``memory://`` with ``clock``, ``icons`` and any other port given."""
    settings = load_settings(env={}, data_dir=tmp_path / "data", database_url="memory://")
    ports.setdefault("random", SeededRandom(17))
    return build_services(settings, clock=clock, icons=icons, **ports)


@pytest.fixture
def services(tmp_path: Path, clock: FakeClock, icons: FakeIconProbe) -> Iterator[Services]:
    """The library's services on the in-process store, fake clock, seeded randomness."""
    built = make_services(tmp_path, clock, icons)
    yield built
    built.close()


def android(services: Services, account: str, token: str, name: str | None = None) -> Device:
    """Register an Android device (FCM token: any non-blank string)."""
    request = NewDevice(token=token, platform=Platform.ANDROID, name=name)
    return services.devices.register(account, request).device


def notify(services: Services, account: str = ALICE, **fields: Any) -> Notification:
    """Create a notification titled ``Deploy finished`` unless ``fields`` say otherwise."""
    fields.setdefault("title", "Deploy finished")
    return asyncio.run(services.notifications.create(account, NewNotification(**fields)))


def stored(services: Services, notification: Notification, account: str = ALICE) -> Notification:
    """The notification as :meth:`get` reads it back now."""
    return services.notifications.get(account, notification.id).notification


class Deliveries:
    """The delivery engine ``build_engine`` makes, with a scripted gateway for every platform.

    :meth:`run` moves the fake clock and lets the engine take what is due then,
    waiting until every answer is recorded; nothing runs in the background.
    """

    def __init__(self, services: Services, clock: FakeClock) -> None:
        self.clock = clock
        self.gateway = ScriptedGateway(clock)
        self.engine = build_engine(services, gateways=dict.fromkeys(Platform, self.gateway))

    def run(self, when: datetime) -> None:
        """Set the clock to ``when``, claim what is due, send it and record the answers."""
        self.clock.set(when)

        async def once() -> None:
            await self.engine.tick()
            await self.engine.drain()

        asyncio.run(once())

    def close(self) -> None:
        """Stop the engine (nothing is in flight between runs)."""
        asyncio.run(self.engine.stop())


@pytest.fixture
def deliveries(services: Services, clock: FakeClock) -> Iterator[Deliveries]:
    """An engine over ``services`` whose gateway answers ``Delivered`` unless scripted."""
    built = Deliveries(services, clock)
    yield built
    built.close()
