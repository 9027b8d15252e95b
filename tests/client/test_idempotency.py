"""The client's retries and the server's Idempotency-Key together: a retry creates nothing."""

from __future__ import annotations

import httpx
import pytest

import pushcore
from tests.client.conftest import Account
from tests.e2e.server import Server

pytestmark = pytest.mark.slow


class LostAnswer(httpx.BaseTransport):
    """Sends every request to the real server, but answers the first POST with a 503,
    as a proxy would whose upstream answered too late: the server did act."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.sent: list[httpx.Request] = []
        self.answers: list[httpx.Response] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(request)
        answer = self.inner.handle_request(request)
        answer.read()
        self.answers.append(answer)
        if request.method == "POST" and len(self.answers) == 1:
            return httpx.Response(503, json={"error": "upstream timeout", "code": "unavailable"})
        return answer

    def close(self) -> None:
        self.inner.close()


def test_a_retry_after_a_503_gets_the_first_answer_and_creates_nothing(
    server: Server, account: Account
) -> None:
    transport = LostAnswer()
    with pushcore.Client(server.base, api_key=account.api_key, transport=transport) as client:
        created = client.notifications.create("once", delay="1h")
        posts = [r for r in transport.sent if r.method == "POST"]
        assert len(posts) == 2
        first_key, second_key = (r.headers["idempotency-key"] for r in posts)
        assert first_key == second_key
        first, replay = transport.answers[:2]
        assert first.status_code == 201
        assert replay.headers["idempotent-replayed"] == "true"
        assert created.id == first.json()["id"]
        assert [n.id for n in client.notifications.list()] == [created.id]


def test_a_batch_retried_after_a_503_is_stored_once(server: Server, account: Account) -> None:
    transport = LostAnswer()
    with pushcore.Client(server.base, api_key=account.api_key, transport=transport) as client:
        created = client.notifications.create_many([{"title": "a"}, {"title": "b"}])
        assert len([r for r in transport.sent if r.method == "POST"]) == 2
        assert sorted(n.id for n in client.notifications.list()) == sorted(c.id for c in created)
