"""/app/session/*: the refresh token only in an HttpOnly, SameSite=Strict, Path-scoped cookie."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from pushcore.domain.model import Plan
from pushcore.services import Services

APP = {"X-Pushcore-App": "1"}
LOGIN = {"account": "alice", "password": "correct horse battery"}


@pytest.fixture
def alice(services: Services) -> str:
    services.people.create("alice", Plan.FREE, LOGIN["password"])
    return "alice"


def _cookie(set_cookie: str) -> dict[str, str]:
    parts = [p.strip() for p in set_cookie.split(";")]
    name, _, value = parts[0].partition("=")
    attributes = {p.partition("=")[0].lower(): p.partition("=")[2] for p in parts[1:]}
    return {"name": name, "value": value, **attributes}


def test_login_sets_the_cookie_and_answers_no_refresh_token(client: TestClient, alice: str) -> None:
    response = client.post("/app/session/login", json=LOGIN, headers=APP)
    assert response.status_code == 200, response.text
    body = response.json()
    assert "refreshToken" not in body
    assert body["account"]["id"] == alice
    assert body["tokenType"] == "Bearer"
    cookie = _cookie(response.headers["set-cookie"])
    assert cookie["name"] == "pushcore_refresh"
    assert cookie["value"].startswith("psr_")
    assert cookie["path"] == "/app/session"
    assert cookie["max-age"] == str(30 * 24 * 3600)  # PUSHCORE_REFRESH_TOKEN_TTL
    assert cookie["samesite"].lower() == "strict"
    assert "httponly" in cookie
    assert "secure" not in cookie  # plain HTTP here: Secure only over HTTPS
    assert response.headers["cache-control"] == "no-store"
    # The access token works on the API.
    account = client.get("/api/account", headers={"Authorization": f"Bearer {body['accessToken']}"})
    assert account.json()["id"] == alice


def test_the_cookie_is_secure_over_https(alice: str, client: TestClient) -> None:
    secure = TestClient(client.app, base_url="https://testserver")
    response = secure.post("/app/session/login", json=LOGIN, headers=APP)
    assert "secure" in _cookie(response.headers["set-cookie"])


def test_refresh_rotates_the_cookie_and_logout_clears_it(client: TestClient, alice: str) -> None:
    first = client.post("/app/session/login", json=LOGIN, headers=APP)
    old = _cookie(first.headers["set-cookie"])["value"]
    refreshed = client.post("/app/session/refresh", headers=APP)
    assert refreshed.status_code == 200, refreshed.text
    assert "refreshToken" not in refreshed.json()
    new = _cookie(refreshed.headers["set-cookie"])["value"]
    assert new != old
    out = client.post("/app/session/logout", headers=APP)
    assert out.json() == {"success": True}
    assert _cookie(out.headers["set-cookie"])["value"] in ("", '""')
    # The token was revoked on the server, not just forgotten here.
    spent = client.post("/api/auth/refresh", json={"refreshToken": new})
    assert spent.status_code == 401


def test_refresh_without_a_cookie_is_401(client: TestClient) -> None:
    response = client.post("/app/session/refresh", headers=APP)
    assert response.status_code == 401
    assert response.json()["code"] == "unauthorized"


def test_a_wrong_password_is_the_apis_401_and_sets_nothing(client: TestClient, alice: str) -> None:
    response = client.post(
        "/app/session/login", json={"account": alice, "password": "wrong password"}, headers=APP
    )
    assert response.status_code == 401
    assert response.json()["error"] == "Invalid account or password"
    assert "psr_" not in response.headers.get("set-cookie", "")


def test_validation_errors_pass_through_with_details(client: TestClient) -> None:
    response = client.post("/app/session/login", json={"account": ""}, headers=APP)
    assert response.status_code == 400
    assert {d["field"] for d in response.json()["details"]} >= {"password"}


@pytest.mark.parametrize(
    "headers",
    [
        {},  # no custom header: a form post or a simple cross-site fetch
        {**APP, "Sec-Fetch-Site": "cross-site"},
        {**APP, "Sec-Fetch-Site": "same-site"},
        {**APP, "Origin": "https://evil.example"},
    ],
)
def test_cross_site_requests_are_refused(
    client: TestClient, alice: str, headers: dict[str, str]
) -> None:
    client.post("/app/session/login", json=LOGIN, headers=APP)
    for path in ("/app/session/refresh", "/app/session/logout", "/app/session/login"):
        response = client.post(path, json=LOGIN, headers=headers)
        assert response.status_code == 403, path
        assert response.json()["code"] == "cross_site_request"
        assert "set-cookie" not in response.headers


def test_same_origin_requests_pass(client: TestClient, alice: str) -> None:
    headers = {**APP, "Sec-Fetch-Site": "same-origin", "Origin": "http://testserver"}
    assert client.post("/app/session/login", json=LOGIN, headers=headers).status_code == 200
