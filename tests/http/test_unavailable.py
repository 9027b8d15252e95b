"""A database outage is API.md's 503 `unavailable` with Retry-After: never a 500."""

from __future__ import annotations

import logging

import pytest

from pushcore.domain.errors import Unavailable
from tests.conftest import Api


def test_an_outage_is_a_503_with_retry_after_and_no_error_logged(
    api: Api, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    key = api.key("alice")

    def down(*_args: object) -> None:
        raise Unavailable("The database cannot be reached; try again shortly")

    monkeypatch.setattr(api.services.notifications, "stats", down)
    with caplog.at_level(logging.WARNING, logger="pushcore.http"):
        response = api.client.get("/api/notifications/stats", headers=key)
    assert response.status_code == 503
    assert response.json() == {
        "error": "The database cannot be reached; try again shortly",
        "code": "unavailable",
    }
    assert response.headers["retry-after"] == "2"
    # An outage is said as one, without a traceback: it is not a bug of the service.
    assert [(r.levelname, r.exc_info) for r in caplog.records] == [("WARNING", None)]
