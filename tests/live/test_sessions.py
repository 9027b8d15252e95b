"""A live channel opened with a session's access token ends within 1 s of that session's
sign-out (or a password change), also when the channel is held by another API process
on the same database (SQLite and PostgreSQL)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pushcore import build_services, load_settings
from pushcore.domain.model import Plan
from pushcore.live import LiveLimits
from tests.live.conftest import LiveServer

PASSWORD = "correct horse battery"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def servers(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[list[LiveServer]]:
    """Two servers (API processes with services of their own) on one database."""
    url = None
    if request.param == "postgres":
        url = request.getfixturevalue("pg_cluster").create_database()
    started: list[LiveServer] = []
    try:
        for _ in range(2):
            settings = load_settings(
                env={"PUSHCORE_RATE_LIMIT": "0"},
                data_dir=tmp_path / "data",
                database_url=url,
                jwt_secret="s" * 32,
            )
            services = build_services(settings)
            services.live.limits = LiveLimits(keepalive=0.3)
            server = LiveServer(services)
            server.start()
            started.append(server)
        started[0].services.people.create("alice", Plan.FREE, PASSWORD)
        yield started
    finally:
        for server in started:
            server.stop()
            server.services.close()


def sign_in(server: LiveServer) -> dict[str, Any]:
    answer = server.request(
        "POST", "/api/auth/login", json={"account": "alice", "password": PASSWORD}
    )
    assert answer.status_code == 200
    session: dict[str, Any] = answer.json()
    return session


def bearer(session: dict[str, Any]) -> dict[str, str]:
    return {"Authorization": f"Bearer {session['accessToken']}"}


def test_sign_out_ends_the_session_s_channels_in_every_process_within_a_second(
    servers: list[LiveServer],
) -> None:
    a, b = servers
    session, other = sign_in(a), sign_in(a)
    here, there = a.listen(bearer(session)), b.listen(bearer(session))
    staying = b.listen(bearer(other))
    assert here.status == there.status == staying.status == 200
    time.sleep(0.3)
    assert not there.ended.is_set()
    out = a.request("POST", "/api/auth/logout", json={"refreshToken": session["refreshToken"]})
    assert out.status_code == 200
    assert here.ended.wait(1.0)
    assert there.ended.wait(1.0)
    assert not staying.ended.is_set()  # another session's channel stays open
    assert b.request("GET", "/api/inbox/events", headers=bearer(session)).status_code == 401


def test_a_password_change_ends_every_session_s_channels(servers: list[LiveServer]) -> None:
    a, b = servers
    one, two = sign_in(a), sign_in(b)
    channels = [b.listen(bearer(one)), a.listen(bearer(two))]
    body = {"currentPassword": PASSWORD, "newPassword": "a brand new secret"}
    changed = a.request("POST", "/api/auth/password", json=body, headers=bearer(one))
    assert changed.status_code == 200
    assert all(channel.ended.wait(1.0) for channel in channels)
