"""Helpers of the fault tests: a real `pushctl serve`, a database made to fail under it,
and how long each answer took."""

from __future__ import annotations

import time
from typing import Any

import httpx

from tests.e2e.server import Server

# API.md: a request answers within 10 s with 503 `unavailable` during an outage,
# /readyz within 1 s in every state, and ready again within 5 s of the return.
# The bounds below leave room for a busy 2-core machine; today's code (500s
# after 30 s, a /readyz that hangs or says ready) fails every one of them.
REQUEST_BOUND = 10.0
READY_BOUND = 1.0
RECOVERY_BOUND = 5.0


def timed(server: Server, method: str, path: str, **kwargs: Any) -> tuple[httpx.Response, float]:
    """The answer to one request, and the seconds it took."""
    started = time.monotonic()
    response = httpx.request(method, f"{server.base}{path}", timeout=40.0, **kwargs)
    return response, time.monotonic() - started


def assert_unavailable(response: httpx.Response) -> None:
    """API.md's 503: the error shape with code `unavailable`, and a whole-seconds Retry-After."""
    assert response.status_code == 503, response.text
    assert response.json()["code"] == "unavailable"
    assert set(response.json()) == {"error", "code"}
    retry_after = response.headers.get("retry-after", "")
    assert retry_after.isdigit(), retry_after
    assert 1 <= int(retry_after) <= 10


def ready_within(server: Server, seconds: float) -> float:
    """Poll /readyz until it says ready; the seconds that took (AssertionError past ``seconds``).

    Every answer must come within READY_BOUND, ready or not.
    """
    started = time.monotonic()
    while True:
        response, took = timed(server, "GET", "/readyz")
        assert took < READY_BOUND, f"/readyz took {took:.2f} s"
        waited = time.monotonic() - started
        if response.status_code == 200:
            return waited
        assert waited < seconds, f"not ready {waited:.1f} s after the database came back"
        time.sleep(0.2)


def create(
    server: Server, key: dict[str, str], title: str = "fault"
) -> tuple[httpx.Response, float]:
    """POST /api/notifications (an hour ahead: nothing to deliver); the answer and its time."""
    return timed(
        server, "POST", "/api/notifications", json={"title": title, "delay": "1h"}, headers=key
    )
