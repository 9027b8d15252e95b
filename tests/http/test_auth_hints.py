"""401s that say what to do: the WWW-Authenticate challenge's error_description (RFC 6750)
says what to do instead, and for a key sent as a Bearer token so does the message, after
API.md's pinned words (`Invalid token: an API key goes in the X-API-Key header`)."""

from __future__ import annotations

import pytest

from tests.conftest import Api


def test_a_key_sent_as_a_bearer_token_is_told_where_keys_go(api: Api) -> None:
    key = api.key("alice")["X-API-Key"]
    response = api.client.get("/api/devices", headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 401
    assert response.json() == {
        "error": "Invalid token: an API key goes in the X-API-Key header,"
        " not Authorization: Bearer",
        "code": "unauthorized",
    }
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    assert "X-API-Key header" in challenge


def test_a_token_where_only_keys_go_is_told_to_create_a_key(api: Api) -> None:
    response = api.client.get("/api/notifications", headers=api.token("alice"))
    assert response.status_code == 401
    assert response.json() == {"error": "This endpoint requires an API key", "code": "unauthorized"}
    assert "POST /api/keys" in response.headers["www-authenticate"]


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer not-a-jwt"}, {"X-API-Key": "psk_nope"}],
)
def test_other_401s_carry_a_plain_challenge(api: Api, headers: dict[str, str]) -> None:
    response = api.client.get("/api/devices", headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert ": " not in response.json()["error"]  # no hint for these
