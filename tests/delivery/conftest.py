"""The ``h`` fixture: services on a fake clock, a scripted gateway, engines driven by hand.

Every test using it runs once on the memory store and once on SQLite. The
engine is never left to its run loop unless a test starts it: a test moves
the fake clock, then calls :meth:`Harness.step` (one ``tick`` and a ``drain``
in a fresh event loop).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import pytest

from pushcore import Services, build_services, load_settings
from pushcore.converter import structure_request
from pushcore.delivery import DeliveryEngine, EngineConfig
from pushcore.delivery.retention import Retention
from pushcore.domain.inputs import NewDevice, NewNotification
from pushcore.domain.model import Delivery, Device, Notification, Platform
from pushcore.domain.retry import RetryPolicy
from pushcore.domain.states import DeliveryStatus, NotificationStatus
from pushcore.ports import Gateway, Store, Transaction
from pushcore.services import NotificationDetail
from tests.fakes.clock import FakeClock
from tests.fakes.gateway import ScriptedGateway

ALICE = "acct_alice"
BOB = "acct_bob"
T0 = datetime(2026, 11, 21, 10, 0, 0, tzinfo=UTC)  # FakeClock's start
DUE = T0 + timedelta(seconds=5)  # a notification's due time with the default delay
LEASE = timedelta(seconds=30)

# Small and exact: three attempts, a 30 s lease, jitter pinned to the middle of its range.
CONFIG = EngineConfig(
    batch_size=50,
    lease=LEASE,
    tick=0.05,
    max_in_flight=1000,
    shutdown_grace=0.2,
    retry=RetryPolicy(max_attempts=3, max_age=0),
)


def half() -> float:
    """The pinned jitter draw: each backoff is three quarters of its ceiling (1.5 s, 3 s, ...)."""
    return 0.5


def at(seconds: float) -> datetime:
    """``T0`` plus ``seconds`` (milliseconds are exact)."""
    return T0 + timedelta(milliseconds=round(seconds * 1000))


class Harness:
    """Services, a fake clock and a scripted gateway, with shortcuts for the tests."""

    def __init__(self, services: Services, clock: FakeClock) -> None:
        self.services = services
        self.clock = clock
        self.gateway = ScriptedGateway(clock)
        self.engines: list[DeliveryEngine] = []

    # -- engines -------------------------------------------------------------

    def engine(
        self,
        owner: str = "test",
        *,
        gateway: Gateway | None = None,
        gateways: dict[Platform, Gateway] | None = None,
        store: Store | None = None,
        retention: Retention | None = None,
        **config: Any,
    ) -> DeliveryEngine:
        """An engine on the harness's store and clock; ``config`` changes :data:`CONFIG`."""
        gw = gateway or self.gateway
        built = DeliveryEngine(
            store or self.services.store,
            self.clock,
            gateways if gateways is not None else dict.fromkeys(Platform, gw),
            attrs.evolve(CONFIG, **config),
            owner,
            uniform=half,
            retention=retention,
        )
        self.engines.append(built)
        return built

    def step(self, engine: DeliveryEngine, when: datetime | None = None) -> datetime | None:
        """Set the clock to ``when`` (if given), tick once and wait for every batch to be recorded.

        Returns what ``tick`` returned: when the run loop would look again.
        """
        if when is not None:
            self.clock.set(when)

        async def run() -> datetime | None:
            next_due = await engine.tick()
            await engine.drain()
            return next_due

        return asyncio.run(run())

    # -- devices and notifications ------------------------------------------

    def device(
        self, token: str, account: str = ALICE, platform: str = "android", **fields: Any
    ) -> Device:
        """Register (or re-register) a device with ``token``."""
        body = {"token": token, "platform": platform, **fields}
        return self.services.devices.register(account, structure_request(NewDevice, body)).device

    def devices(self, account: str = ALICE) -> dict[str, Device]:
        """The account's devices by token, as GET /api/devices lists them."""
        return {d.token: d for d in self.services.devices.list(account)}

    async def notify_async(self, account: str = ALICE, **fields: Any) -> Notification:
        """Create a notification (title given); ``fields`` are JSON names (``customDelay``...).

        For a scenario already on an event loop, as the HTTP API creates them.
        """
        body = {"title": "Deploy finished", **fields}
        request = structure_request(NewNotification, body)
        return await self.services.notifications.create(account, request)

    def notify(self, account: str = ALICE, **fields: Any) -> Notification:
        """:meth:`notify_async` from a thread with no event loop running (the test's own)."""
        return asyncio.run(self.notify_async(account, **fields))

    def notify_in(self, seconds: int, account: str = ALICE, **fields: Any) -> Notification:
        """A notification due ``seconds`` after now."""
        return self.notify(account, delay="custom", customDelay=seconds, **fields)

    def get(self, notification: Notification, account: str = ALICE) -> NotificationDetail:
        """GET /api/notifications/:id."""
        return self.services.notifications.get(account, notification.id)

    def status(self, notification: Notification, account: str = ALICE) -> NotificationStatus:
        """The notification's status now."""
        return self.get(notification, account).notification.status

    def deliveries(self, notification: Notification) -> Sequence[Delivery]:
        """The notification's deliveries as stored."""
        with self.services.store.read() as tx:
            return tx.progress.for_notification(notification.id)

    def delivery_statuses(self, notification: Notification) -> list[DeliveryStatus]:
        """The statuses of the notification's deliveries, sorted."""
        return sorted(d.status for d in self.deliveries(notification))

    def close(self) -> None:
        """Stop the engines the test left running, then close the store."""
        for engine in self.engines:
            if engine._tasks:  # batches of a loop that is gone: nothing to wait for
                engine._claimer.shutdown(wait=True)
                engine._recorder.shutdown(wait=True)
            else:
                asyncio.run(engine.stop())
        self.services.close()


@pytest.fixture(params=["memory", "sqlite"])
def h(request: pytest.FixtureRequest, tmp_path: Path, fake_clock: FakeClock) -> Iterator[Harness]:
    """The harness, on the memory store or on the default SQLite file."""
    url = "memory://" if request.param == "memory" else None
    settings = load_settings(env={}, data_dir=tmp_path / "data", database_url=url)
    harness = Harness(build_services(settings, clock=fake_clock), fake_clock)
    yield harness
    harness.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db(request: pytest.FixtureRequest, tmp_path: Path, fake_clock: FakeClock) -> Iterator[Harness]:
    """The harness on SQLite and on PostgreSQL."""
    url = None
    if request.param == "postgres":
        url = request.getfixturevalue("pg_cluster").create_database()
    settings = load_settings(env={}, data_dir=tmp_path / "data", database_url=url)
    harness = Harness(build_services(settings, clock=fake_clock), fake_clock)
    yield harness
    harness.close()


async def until(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    """Let the loop and the database threads work until ``condition()`` holds.

    Nothing here depends on how long that takes: ``timeout`` (real seconds)
    only turns a condition that never comes into a failure instead of a hang.
    """
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"condition not met within {timeout} s")
        await asyncio.sleep(0.005)


async def advancing(h: Harness, condition: Callable[[], bool], timeout: float = 30.0) -> None:
    """Move the fake clock on a second at a time (letting the engine work between
    moves) until ``condition()`` holds; fail after ``timeout`` real seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"condition not met within {timeout} s")
        h.clock.advance(1.0)
        await asyncio.sleep(0.01)


def crash_while_sending(h: Harness, owner: str = "engine-a", **config: Any) -> ScriptedGateway:
    """An engine claims what is due and dies before any answer: its event loop just ends.

    Nothing is recorded and nothing released, as after kill -9; the deliveries
    stay in flight under its lease. Returns the gateway that got its sends.
    """
    gateway = ScriptedGateway(h.clock)
    engine = h.engine(owner, gateway=gateway, **config)

    async def send_and_hang() -> None:
        gateway.hold()
        await engine.tick()
        await until(lambda: gateway.waiting == len(gateway.calls) > 0)

    asyncio.run(send_and_hang())
    return gateway


async def stop_at_grace_end(h: Harness, engine: DeliveryEngine) -> None:
    """Stop ``engine``; once stop() waits for its grace period, move the clock to its end."""
    grace_end = h.clock.now() + timedelta(seconds=engine.config.shutdown_grace)
    stopping = asyncio.ensure_future(engine.stop())
    await until(lambda: grace_end in h.clock.sleepers or stopping.done())
    h.clock.set(grace_end)
    await stopping


class WatchedStore:
    """A store that counts the write transactions opened through it, and can hold them.

    The engine is given this in place of the harness's store, so tests see its
    claims and records from the outside instead of patching its methods.
    """

    def __init__(self, store: Store) -> None:
        self._store = store
        self.transactions = 0
        self.waiting = threading.Event()  # set when a transaction waits at the gate
        self.gate: threading.Event | None = None
        # When set, the gate holds only the transactions of threads named so (a prefix).
        self.gated_threads: str | None = None

    def transaction(self, *, urgent: bool = False) -> AbstractContextManager[Transaction]:
        """The store's transaction, counted; held first while a gate is closed."""
        self.transactions += 1
        gate, only = self.gate, self.gated_threads
        if only is not None and not threading.current_thread().name.startswith(only):
            gate = None
        if gate is not None and not gate.is_set():
            self.waiting.set()
            gate.wait()
        return self._store.transaction(urgent=urgent)

    def read(self) -> AbstractContextManager[Transaction]:
        """The store's read snapshot."""
        return self._store.read()

    def ping(self) -> None:
        """The store's ping."""
        self._store.ping()

    def close(self) -> None:
        """Nothing: the harness closes the store it owns."""
