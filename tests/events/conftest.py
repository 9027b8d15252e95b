"""Event webhooks on SQLite and PostgreSQL: the app (no engine), a fake clock at the real
time (receivers check a signature's timestamp against their own clock), a sender driven
round by round, and a loopback receiver."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from pushcore import Services, build_services, load_settings
from pushcore.delivery.webhooks import EventSender, SenderConfig
from pushcore.domain.model import Plan
from pushcore.outbound.guard import NetworkGuard
from pushcore_http.app import create_app
from tests.fakes.clock import FakeClock
from tests.fakes.receiver import Receiver, running_receiver

ALICE = "alice"


class World:
    """The app, its services and clock, a sender and ways to reach them."""

    def __init__(
        self, services: Services, client: TestClient, clock: FakeClock, guard: NetworkGuard
    ) -> None:
        self.services = services
        self.client = client
        self.clock = clock
        # The services' and the sender's SSRF guard: a test may forbid private addresses.
        self.guard = guard
        self.sender = EventSender(
            services.store,
            clock,
            guard,
            "sender-1",
            SenderConfig(timeout=2.0, per_endpoint=2, claimed_per_endpoint=4),
        )

    def auth(self, account: str = ALICE) -> dict[str, str]:
        """A JWT for ``account`` (a JWT has every scope)."""
        token = self.services.tokens.issue(account, timedelta(hours=1))
        return {"Authorization": f"Bearer {token}"}

    def create(self, url: str, events: list[str] | None = None, **more: Any) -> dict[str, Any]:
        """POST /api/webhooks; the answer's JSON (asserting 201)."""
        body = {"url": url, "events": events or ["*"], **more}
        answer = self.client.post("/api/webhooks", json=body, headers=self.auth())
        assert answer.status_code == 201, answer.text
        return dict(answer.json())

    def pump(self) -> int:
        """One sender round, waiting until each POST it started is answered and recorded."""

        async def once() -> int:
            started = await self.sender.round()
            await self.sender.drain()
            await self.sender.aclose()
            return started

        return asyncio.run(once())


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    """The app on SQLite or PostgreSQL, private addresses allowed (the receiver is on
    loopback), its clock fake and at the real time."""
    url = None
    if request.param == "postgres":
        url = request.getfixturevalue("pg_cluster").create_database()
    settings = load_settings(
        env={},
        data_dir=tmp_path / "data",
        database_url=url,
        allow_private_networks=True,
        jwt_secret="s" * 32,
    )
    clock = FakeClock(datetime.now(UTC).replace(microsecond=0))
    guard = NetworkGuard(allow_private=True)
    services = build_services(settings, clock=clock, guard=guard)
    services.accounts.set_plan(ALICE, Plan.FREE)
    with TestClient(create_app(services, run_engine=False), raise_server_exceptions=False) as c:
        yield World(services, c, clock, guard)
    services.close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A webhook receiver on loopback."""
    with running_receiver() as running:
        yield running
