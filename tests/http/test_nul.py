"""The NUL character (U+0000) never reaches a store: PostgreSQL's text cannot hold it.

These run on the default store; PostgreSQL answers the same (the guard is in
front of every store), which tests/e2e/test_postgres.py checks end to end.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.conftest import Api


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        pytest.param({"title": "a\u0000b"}, ["title"], id="a-field"),
        pytest.param({"title": "t", "metadata": {"k": "v\u0000"}}, ["metadata.k"], id="nested"),
        pytest.param(
            {"title": "\u0000", "body": "\u0000", "metadata": {"\u0000": "v"}},
            ["body", "metadata.\u0000", "title"],
            id="every-field-listed",
        ),
    ],
)
def test_a_nul_in_a_body_string_is_a_validation_error(
    api: Api, body: dict[str, object], fields: list[str]
) -> None:
    response = api.client.post("/api/notifications", json=body, headers=api.key("alice"))
    assert response.status_code == 400
    assert response.json()["code"] == "validation_error"
    assert [d["field"] for d in response.json()["details"]] == fields
    assert {d["message"] for d in response.json()["details"]} == {
        "must not contain the NUL character"
    }


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/notifications/ntf_%00"),
        ("DELETE", "/api/devices/dev_%00x"),
        ("GET", "/api/streams/lookup/falcon-%00"),
    ],
)
def test_a_nul_in_a_path_names_nothing(api: Api, method: str, path: str) -> None:
    headers = {**api.key("alice"), **api.token("alice")}
    response = api.client.request(method, path, headers=headers)
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"
    assert response.json()["error"].startswith("Not found")


def test_a_token_whose_subject_holds_a_nul_is_invalid(api: Api) -> None:
    token = api.services.tokens.issue("al\u0000ice", timedelta(hours=1))
    response = api.client.get("/api/keys", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 401
    assert response.json() == {"error": "Invalid token", "code": "unauthorized"}
