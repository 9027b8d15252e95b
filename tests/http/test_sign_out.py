"""Sign-out and a password change end sessions at once: their access tokens are refused
(API.md, "People-side limits"), in this process and, within 1 s, in any other API
process on the same database (SQLite and PostgreSQL)."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from pushcore import Services, build_services, load_settings
from pushcore.domain.model import Plan
from pushcore_http import create_app
from tests.conftest import Api
from tests.http.test_jwt import AUDIENCE, ISSUER, IdP
from tests.http.test_signin import PASSWORD, bearer, login

SIGNED_OUT = {"error": "Invalid token", "code": "unauthorized"}


def account(client: TestClient, session: dict[str, Any]) -> int:
    status: int = client.get("/api/account", headers=bearer(session)).status_code
    return status


@pytest.fixture
def alice(services: Services) -> None:
    services.people.create("alice", Plan.FREE, PASSWORD)


@pytest.mark.usefixtures("alice")
def test_sign_out_refuses_that_session_s_access_token_at_once(client: TestClient) -> None:
    leaving, staying = login(client).json(), login(client).json()
    assert account(client, leaving) == account(client, staying) == 200
    out = client.post("/api/auth/logout", json={"refreshToken": leaving["refreshToken"]})
    assert out.status_code == 200
    refused = client.get("/api/account", headers=bearer(leaving))
    assert refused.status_code == 401
    assert refused.json() == SIGNED_OUT
    assert "signed out" in refused.headers["www-authenticate"]
    assert account(client, staying) == 200  # another session of the account goes on


@pytest.mark.usefixtures("alice")
def test_a_password_change_refuses_every_session_s_access_token(
    services: Services, client: TestClient, api: Api
) -> None:
    one, two = login(client).json(), login(client).json()
    body = {"currentPassword": PASSWORD, "newPassword": "a brand new secret"}
    assert client.post("/api/auth/password", json=body, headers=bearer(one)).status_code == 200
    assert account(client, one) == account(client, two) == 401
    again = login(client, password="a brand new secret").json()
    assert account(client, again) == 200
    # pushctl accounts passwd does the same.
    services.people.set_password("alice", "yet another secret")
    assert account(client, again) == 401
    # Tokens of no session (pushctl token issue) are not sessions: they go on.
    assert client.get("/api/account", headers=api.token("alice")).status_code == 200


def test_a_reused_refresh_token_ends_the_session_s_access_tokens(
    services: Services, client: TestClient
) -> None:
    services.people.create("alice", Plan.FREE, PASSWORD)
    first = login(client).json()
    second = client.post("/api/auth/refresh", json={"refreshToken": first["refreshToken"]}).json()
    assert account(client, second) == 200
    stolen = client.post("/api/auth/refresh", json={"refreshToken": first["refreshToken"]})
    assert stolen.status_code == 401
    assert account(client, first) == account(client, second) == 401


def test_a_jwks_provider_s_tokens_are_never_signed_out(tmp_path: Path) -> None:
    idp = IdP(tmp_path)
    settings = load_settings(
        env={}, data_dir=tmp_path / "d", jwks=str(idp.jwks_path), jwt_issuer=ISSUER,
        jwt_audience=AUDIENCE,
    )  # fmt: skip
    services = build_services(settings)
    try:
        with TestClient(create_app(services, run_engine=False)) as client:
            services.people.create("alice", Plan.FREE, PASSWORD)
            session = login(client).json()
            assert client.post("/api/auth/logout", json={"refreshToken": session["refreshToken"]})
            assert account(client, session) == 401
            # The provider's own sid, even one equal to a session signed out here.
            payload = session["accessToken"].split(".")[1]
            sid = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["sid"]
            token = idp.rs256(sid=sid)
            answer = client.get("/api/account", headers={"Authorization": f"Bearer {token}"})
            assert answer.status_code == 200
    finally:
        services.close()


# -- several API processes on one database -------------------------------------------------


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def two_processes(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[TestClient, TestClient]]:
    """Two apps with services of their own (as two API processes) on one database."""
    url = None
    if request.param == "postgres":
        url = request.getfixturevalue("pg_cluster").create_database()
    made = []
    for _ in range(2):
        settings = load_settings(
            env={}, data_dir=tmp_path / "data", database_url=url, jwt_secret="s" * 32
        )
        services = build_services(settings)
        client = TestClient(create_app(services, run_engine=False), raise_server_exceptions=False)
        made.append((services, client.__enter__()))
    made[0][0].people.create("alice", Plan.FREE, PASSWORD)
    yield made[0][1], made[1][1]
    for services, client in made:
        client.__exit__(None, None, None)
        services.close()


def refused_within(client: TestClient, session: dict[str, Any], seconds: float) -> float:
    """How long until ``client`` refuses the session's access token (fails past ``seconds``)."""
    start = time.monotonic()
    while (waited := time.monotonic() - start) < seconds:
        if account(client, session) == 401:
            return waited
        time.sleep(0.02)
    raise AssertionError(f"the token still worked {seconds} s after")


def test_a_sign_out_in_one_process_is_seen_by_another_within_a_second(
    two_processes: tuple[TestClient, TestClient],
) -> None:
    a, b = two_processes
    session, other = login(a).json(), login(b).json()
    assert account(b, session) == 200  # b has read the signed-out sessions now
    assert a.post("/api/auth/logout", json={"refreshToken": session["refreshToken"]})
    assert account(a, session) == 401  # at once where it happened
    refused_within(b, session, 1.0)
    assert account(b, other) == 200
    body = {"currentPassword": PASSWORD, "newPassword": "a brand new secret"}
    assert b.post("/api/auth/password", json=body, headers=bearer(other)).status_code == 200
    fresh = login(a, password="a brand new secret").json()
    refused_within(a, other, 1.0)
    assert account(a, fresh) == account(b, fresh) == 200
