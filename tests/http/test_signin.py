"""/api/auth/* and /api/account over HTTP: every status and message API.md pins."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from pushcore import Services, build_services, load_settings
from pushcore.domain.model import Plan
from pushcore_http import create_app, signin_limits
from tests.conftest import Api
from tests.http.test_jwt import AUDIENCE, ISSUER, IdP

PASSWORD = "correct horse battery"
BAD = {"error": "Invalid account or password", "code": "unauthorized"}
SESSION_KEYS = {"accessToken", "tokenType", "expiresIn", "refreshToken", "account"}


def login(client: TestClient, account: str = "alice", password: str = PASSWORD) -> Any:
    return client.post("/api/auth/login", json={"account": account, "password": password})


def bearer(session: dict[str, Any]) -> dict[str, str]:
    return {"Authorization": f"Bearer {session['accessToken']}"}


@pytest.fixture
def alice(services: Services) -> None:
    services.people.create("alice", Plan.PRO, PASSWORD)


@pytest.fixture
def app_with(tmp_path: Path) -> Iterator[Any]:
    """A client of an app built with other settings."""
    made: list[tuple[Services, TestClient]] = []

    def make(**settings: Any) -> tuple[Services, TestClient]:
        built = build_services(load_settings(env={}, data_dir=tmp_path / "other", **settings))
        client = TestClient(create_app(built, run_engine=False), raise_server_exceptions=False)
        made.append((built, client.__enter__()))
        return made[-1]

    yield make
    for built, client in made:
        client.__exit__(None, None, None)
        built.close()


def test_methods_say_password_and_whether_sign_up_is_on(client: TestClient, app_with: Any) -> None:
    methods = client.get("/api/auth/methods")
    assert methods.status_code == 200
    assert methods.json() == {"password": True, "signup": False, "oidc": None}
    _, open_client = app_with(signup=True)
    assert open_client.get("/api/auth/methods").json()["signup"] is True


@pytest.mark.usefixtures("alice")
def test_login_answers_a_session_whose_token_creates_a_key_that_works(client: TestClient) -> None:
    response = login(client, "Alice")
    assert response.status_code == 200
    session = response.json()
    assert set(session) == SESSION_KEYS
    assert session["tokenType"] == "Bearer"
    assert session["expiresIn"] == 900
    assert session["account"] == {"id": "alice", "plan": "pro"}
    assert session["refreshToken"].startswith("psr_")
    assert len(session["refreshToken"]) == 47

    created = client.post(
        "/api/keys", json={"name": "ci", "scopes": ["notifications:read"]}, headers=bearer(session)
    )
    assert created.status_code == 201, created.text
    listed = client.get("/api/notifications", headers={"X-API-Key": created.json()["key"]})
    assert listed.status_code == 200


@pytest.mark.usefixtures("alice")
def test_unknown_account_and_wrong_password_get_the_same_401(client: TestClient) -> None:
    for account, password in [("alice", "wrong password"), ("nobody", PASSWORD)]:
        response = login(client, account, password)
        assert response.status_code == 401
        assert response.json() == BAD


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, ["account", "password"]),
        ({"account": "", "password": ""}, ["account", "password"]),
        ({"account": "alice", "password": "x" * 257}, ["password"]),
        ({"account": "alice", "password": PASSWORD, "remember": True}, ["remember"]),
    ],
)
def test_a_malformed_login_is_a_400_naming_each_field(
    client: TestClient, body: dict[str, Any], fields: list[str]
) -> None:
    response = client.post("/api/auth/login", json=body)
    assert response.status_code == 400
    assert response.json()["code"] == "validation_error"
    assert [d["field"] for d in response.json()["details"]] == fields


@pytest.mark.usefixtures("alice")
def test_refresh_rotates_and_a_spent_token_revokes_the_chain(client: TestClient) -> None:
    first = login(client).json()
    second = client.post("/api/auth/refresh", json={"refreshToken": first["refreshToken"]})
    assert second.status_code == 200
    assert set(second.json()) == SESSION_KEYS
    third = client.post("/api/auth/refresh", json={"refreshToken": second.json()["refreshToken"]})
    assert third.status_code == 200

    reused = client.post("/api/auth/refresh", json={"refreshToken": first["refreshToken"]})
    assert reused.status_code == 401
    assert reused.json() == {"error": "Invalid refresh token", "code": "unauthorized"}
    latest = client.post("/api/auth/refresh", json={"refreshToken": third.json()["refreshToken"]})
    assert latest.status_code == 401


@pytest.mark.usefixtures("alice")
def test_logout_succeeds_and_ends_the_refresh_token(client: TestClient) -> None:
    session = login(client).json()
    for _ in range(2):  # again (a spent or unknown token) is the same success
        out = client.post("/api/auth/logout", json={"refreshToken": session["refreshToken"]})
        assert out.status_code == 200
        assert out.json() == {"success": True}
    again = client.post("/api/auth/refresh", json={"refreshToken": session["refreshToken"]})
    assert again.status_code == 401


def test_sign_up_is_403_unless_turned_on(client: TestClient, app_with: Any) -> None:
    body = {"account": "Carol", "password": PASSWORD}
    closed = client.post("/api/auth/signup", json=body)
    assert closed.status_code == 403
    assert closed.json() == {
        "error": "Sign-up is disabled on this server",
        "code": "signup_disabled",
    }

    _, open_client = app_with(signup=True)
    made = open_client.post("/api/auth/signup", json=body)
    assert made.status_code == 201
    assert set(made.json()) == SESSION_KEYS
    assert made.json()["account"] == {"id": "carol", "plan": "free"}
    taken = open_client.post("/api/auth/signup", json={"account": "carol", "password": PASSWORD})
    assert taken.status_code == 409
    assert taken.json() == {"error": "An account 'carol' exists already", "code": "account_exists"}
    bad = open_client.post("/api/auth/signup", json={"account": "-x", "password": "short"})
    assert bad.status_code == 400
    assert [d["field"] for d in bad.json()["details"]] == ["account", "password"]
    assert login(open_client, "CAROL").status_code == 200


COMMON = "is one of the 10,000 most common passwords: choose another"


@pytest.mark.parametrize("common", ["password", "PASSWORD", "iloveyou", "Qwerty123"])
def test_a_common_password_is_a_400_naming_the_field(app_with: Any, common: str) -> None:
    services, client = app_with(signup=True)
    refused = client.post("/api/auth/signup", json={"account": "carol", "password": common})
    assert refused.status_code == 400
    assert refused.json()["details"] == [{"field": "password", "message": COMMON}]
    assert login(client, "carol", common).status_code == 401  # nothing was made

    services.people.create("alice", Plan.FREE, PASSWORD)
    session = login(client).json()
    body = {"currentPassword": PASSWORD, "newPassword": common}
    change = client.post("/api/auth/password", json=body, headers=bearer(session))
    assert change.status_code == 400
    assert change.json()["details"] == [{"field": "newPassword", "message": COMMON}]
    assert login(client).status_code == 200  # the old password still holds


@pytest.mark.usefixtures("alice")
def test_changing_the_password_needs_a_user_token_and_revokes_every_session(
    api: Api, client: TestClient
) -> None:
    session, other = login(client).json(), login(client).json()
    body = {"currentPassword": PASSWORD, "newPassword": "a new password"}
    anonymous = client.post("/api/auth/password", json=body)
    assert anonymous.status_code == 401
    assert anonymous.json()["error"] == "Authentication required"
    with_key = client.post("/api/auth/password", json=body, headers=api.key("alice"))
    assert with_key.json()["error"] == "This endpoint requires a user token"

    wrong = {"currentPassword": "not it at all", "newPassword": "a new password"}
    refused = client.post("/api/auth/password", json=wrong, headers=bearer(session))
    assert refused.status_code == 400
    assert refused.json()["details"] == [
        {"field": "currentPassword", "message": "is not the account's password"}
    ]
    changed = client.post("/api/auth/password", json=body, headers=bearer(session))
    assert changed.status_code == 200
    assert changed.json() == {"success": True}
    for each in (session, other):
        spent = client.post("/api/auth/refresh", json={"refreshToken": each["refreshToken"]})
        assert spent.status_code == 401
    assert login(client).json() == BAD
    assert login(client, password="a new password").status_code == 200


@pytest.mark.usefixtures("alice")
def test_account_shows_the_signed_in_account(api: Api, client: TestClient) -> None:
    session = login(client).json()
    response = client.get("/api/account", headers=bearer(session))
    assert response.status_code == 200
    body = response.json()
    # With the recipient's settings (API.md, "The recipient's time"), at their defaults.
    assert set(body) == {"id", "plan", "createdAt", "timeZone", "quietHours", "snoozeUntil"}
    assert (body["id"], body["plan"], body["timeZone"]) == ("alice", "pro", "UTC")
    assert client.get("/api/account").json()["error"] == "Authentication required"
    with_key = client.get("/api/account", headers=api.key("alice"))
    assert with_key.json()["error"] == "This endpoint requires a user token"
    # A token of an account never seen creates it, on the free plan, as everywhere.
    assert client.get("/api/account", headers=api.token("dave")).json()["plan"] == "free"


@pytest.mark.usefixtures("alice")
def test_sign_in_posts_keep_no_idempotency_key(client: TestClient) -> None:
    headers = {"Idempotency-Key": "same-key"}
    body = {"account": "alice", "password": PASSWORD}
    first = client.post("/api/auth/login", json=body, headers=headers)
    second = client.post("/api/auth/login", json=body, headers=headers)
    assert first.status_code == second.status_code == 200
    assert "idempotent-replayed" not in second.headers
    assert first.json()["refreshToken"] != second.json()["refreshToken"]


def test_failures_for_one_account_are_limited_then_429_with_retry_after(
    services: Services, client: TestClient
) -> None:
    services.people.create("alice", Plan.FREE, PASSWORD)
    answers = [login(client, "alice", f"guess number {i}").status_code for i in range(10)]
    assert answers == [401] * 10
    limited = login(client, "ALICE")  # the same account, however typed, even when right
    assert limited.status_code == 429
    assert limited.json() == {
        "error": "Too many failed sign-ins for this account",
        "code": "rate_limited",
    }
    assert int(limited.headers["retry-after"]) >= 1
    services.people.create("bob", Plan.FREE, PASSWORD)
    assert login(client, "bob").status_code == 200  # other accounts are not held back


def test_attempts_from_one_address_are_limited(services: Services, client: TestClient) -> None:
    answers: list[Any] = []
    while len(answers) < 45 and 429 not in (a.status_code for a in answers):
        answers.append(login(client, f"user{len(answers)}", PASSWORD))
    statuses = [a.status_code for a in answers]
    # 30 at once, then one every 2 s (a slow machine may earn one or two more).
    assert statuses[:30] == [401] * 30
    assert 429 in statuses
    limited = answers[statuses.index(429)]
    assert limited.json()["error"] == "Too many sign-ins from this address"
    assert int(limited.headers["retry-after"]) >= 1


def test_no_limits_when_rate_limiting_is_off(app_with: Any) -> None:
    _, unlimited = app_with(rate_limit=0)
    assert {login(unlimited, "x", PASSWORD).status_code for _ in range(40)} == {401}


def test_sessions_work_beside_a_jwks(tmp_path: Path, app_with: Any) -> None:
    idp = IdP(tmp_path)
    services, jwks_client = app_with(
        jwks=str(idp.jwks_path), jwt_issuer=ISSUER, jwt_audience=AUDIENCE
    )
    services.people.create("alice", Plan.FREE, PASSWORD)
    session = login(jwks_client).json()
    assert jwks_client.get("/api/keys", headers=bearer(session)).status_code == 200
    from_idp = {"Authorization": f"Bearer {idp.rs256()}"}
    assert jwks_client.get("/api/keys", headers=from_idp).status_code == 200
    # A token signed with another secret is no token of this server's.
    forged = session["accessToken"][:-4] + "AAAA"
    assert jwks_client.get("/api/keys", headers={"Authorization": f"Bearer {forged}"}).json() == {
        "error": "Invalid token",
        "code": "unauthorized",
    }


@pytest.fixture
def no_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Refusals answered at once (they are held 1 to 3 s otherwise): quicker tests."""
    monkeypatch.setattr(signin_limits, "HOLD_FACTOR", 0)


def from_address(client: TestClient, address: str) -> TestClient:
    """Another client of the same app, whose requests come from ``address``."""
    return TestClient(client.app, client=(address, 40000), raise_server_exceptions=False)


@pytest.mark.usefixtures("alice", "no_holds")
def test_wrong_passwords_from_one_address_never_refuse_the_right_one_from_another(
    client: TestClient,
) -> None:
    attacker = from_address(client, "203.0.113.9")
    owner = from_address(client, "198.51.100.7")
    guesses = [login(attacker, "alice", f"guess number {i}").status_code for i in range(12)]
    assert guesses == [401] * 10 + [429] * 2  # the guesser is slowed at once
    for i in range(11):
        assert login(attacker, "alice", f"still guessing {i}").status_code == 429
        assert login(owner, "ALICE").status_code == 200  # every time, not 2 in 11


@pytest.mark.usefixtures("alice", "no_holds")
def test_guessing_spread_over_addresses_is_slowed_but_the_owner_is_not(
    client: TestClient,
) -> None:
    # Five addresses, three guesses each: 15 failures, past the account's 10.
    for n in range(5):
        guesser = from_address(client, f"203.0.113.{n}")
        assert [login(guesser, "alice", f"guess {n}-{i}").status_code for i in range(3)] == [
            401
        ] * 3
    # A guessing address is refused even the right password now...
    assert login(from_address(client, "203.0.113.0")).status_code == 429
    # ... and an address that is not guessing is not.
    assert login(from_address(client, "198.51.100.7")).status_code == 200
    # Nor is one that mistyped once or twice.
    mistyped = from_address(client, "198.51.100.8")
    assert login(mistyped, "alice", "correct horse battry").status_code == 401
    assert login(mistyped).status_code == 200


BAD_REFRESH = {"refreshToken": "psr_" + "A" * 43}
LIMITED = [
    ("/api/auth/refresh", BAD_REFRESH, 401),
    ("/api/auth/logout", BAD_REFRESH, 200),
    ("/api/auth/signup", {"account": "x", "password": "short"}, 400),
]


@pytest.mark.usefixtures("no_holds")
@pytest.mark.parametrize(("path", "body", "status"), LIMITED)
def test_refresh_logout_and_signup_are_limited_per_address(
    app_with: Any, path: str, body: dict[str, str], status: int
) -> None:
    _, client = app_with(signup=True)
    answers: list[Any] = []
    while len(answers) < 100 and 429 not in (a.status_code for a in answers):
        answers.append(client.post(path, json=body))
    statuses = [a.status_code for a in answers]
    assert 429 in statuses, f"{len(statuses)} calls, none refused"
    first = statuses.index(429)
    # Sign-up also takes from the address's sign-in attempts (30 at once).
    assert first >= (30 if path.endswith("signup") else 50)
    assert set(statuses[:first]) == {status}
    assert int(answers[first].headers["retry-after"]) >= 1
    assert answers[first].json()["code"] == "rate_limited"
    other = from_address(client, "198.51.100.7")  # another address is not held back
    assert other.post(path, json=body).status_code == status


@pytest.mark.parametrize(("path", "body", "status"), LIMITED)
def test_refresh_logout_and_signup_are_not_limited_when_rate_limiting_is_off(
    app_with: Any, path: str, body: dict[str, str], status: int
) -> None:
    _, client = app_with(signup=True, rate_limit=0)
    assert {client.post(path, json=body).status_code for _ in range(70)} == {status}
