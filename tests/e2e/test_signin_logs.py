"""No password or token of a sign-in ever reaches a log: the server's output at DEBUG,
access log on, and the in-process loggers at DEBUG, searched for every secret of a
full sign-in, failure, refresh, reuse, password change and logout."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from pushcore import Services, build_services, load_settings
from pushcore.domain.model import Plan
from pushcore.domain.people import hash_refresh_token
from pushcore_http import create_app
from tests.e2e.server import Server

PASSWORD = "first secret pass"
NEW_PASSWORD = "second secret pass"
WRONG = "wrong secret pass"

Post = Callable[..., Any]


def sign_in_story(post: Post, get: Post) -> list[str]:
    """A full story of sign-ins against an app; every secret it saw."""
    secrets = [PASSWORD, NEW_PASSWORD, WRONG]
    assert post("/api/auth/login", json={"account": "alice", "password": WRONG}).status_code == 401
    first = post("/api/auth/login", json={"account": "Alice", "password": PASSWORD}).json()
    second = post("/api/auth/refresh", json={"refreshToken": first["refreshToken"]}).json()
    reused = post("/api/auth/refresh", json={"refreshToken": first["refreshToken"]})
    assert reused.status_code == 401  # the chain is revoked: a warning is logged
    third = post("/api/auth/login", json={"account": "alice", "password": PASSWORD}).json()
    user = {"Authorization": f"Bearer {third['accessToken']}"}
    assert get("/api/account", headers=user).status_code == 200
    wrong = {"currentPassword": WRONG, "newPassword": NEW_PASSWORD}
    assert post("/api/auth/password", json=wrong, headers=user).status_code == 400
    change = {"currentPassword": PASSWORD, "newPassword": NEW_PASSWORD}
    assert post("/api/auth/password", json=change, headers=user).status_code == 200
    fourth = post("/api/auth/login", json={"account": "alice", "password": NEW_PASSWORD}).json()
    assert (
        post("/api/auth/logout", json={"refreshToken": fourth["refreshToken"]}).status_code == 200
    )
    for session in (first, second, third, fourth):
        for name in ("accessToken", "refreshToken"):
            secrets.append(session[name])
        secrets.append(hash_refresh_token(session["refreshToken"]))
        # The part of a JWT that proves it (its header and claims are no secret).
        secrets.append(session["accessToken"].rsplit(".", 1)[1])
    return secrets


def assert_none_in(text: str, secrets: list[str]) -> None:
    assert "alice" in text or "auth" in text  # the log did capture something
    for secret in secrets:
        assert secret not in text, f"a secret is in the log: {secret[:6]}..."


@pytest.mark.slow
def test_the_servers_debug_output_holds_no_secret(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    env = {"PUSHCORE_LOG_LEVEL": "debug", "PUSHCORE_ACCESS_LOG": "true", "PUSHCORE_RATE_LIMIT": "0"}
    server = Server(data_dir, env=env)
    server.start()
    try:
        services = build_services(load_settings(env={}, data_dir=data_dir))
        services.people.create("alice", Plan.FREE, PASSWORD)
        services.close()
        secrets = sign_in_story(
            lambda path, **kw: server.request("POST", path, **kw),
            lambda path, **kw: server.request("GET", path, **kw),
        )
    finally:
        server.stop()
    log = server.log.read_text()
    assert "/api/auth/refresh" in log  # the access log is on
    assert "spent refresh token" in log
    assert_none_in(log, secrets)


def test_the_loggers_at_debug_hold_no_secret(
    services: Services, caplog: pytest.LogCaptureFixture
) -> None:
    services.people.create("alice", Plan.FREE, PASSWORD)
    caplog.set_level(logging.DEBUG)
    with TestClient(create_app(services, run_engine=False)) as client:
        secrets = sign_in_story(client.post, client.get)
    text = "\n".join(
        f"{r.name} {r.getMessage()} {r.args!r} {r.exc_text or ''}" for r in caplog.records
    )
    assert_none_in(text, secrets)
