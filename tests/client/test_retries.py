"""Retries, Idempotency-Key, credentials on the wire and error answers, against a loopback fake."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

import pushcore
from tests.client.fake_api import FakeApi, running_fake
from tests.e2e.server import free_port

CREATED = {
    "id": "ntf_01JD0000000000000000000000",
    "title": "hi",
    "body": "",
    "status": "QUEUED",
    "scheduledAt": "2026-11-21T10:15:35.123Z",
    "createdAt": "2026-11-21T10:15:30.123Z",
    "devicesTargeted": 1,
}
UNAVAILABLE = {"error": "Service unavailable", "code": "unavailable"}
LIMITED = {"error": "Too many requests", "code": "rate_limited"}


@pytest.fixture
def fake() -> Iterator[FakeApi]:
    with running_fake() as f:
        yield f


def test_a_503_is_retried_after_retry_after_with_the_same_idempotency_key(
    fake: FakeApi,
) -> None:
    fake.answer(503, UNAVAILABLE, Retry_After="1")
    fake.answer(201, CREATED)
    started = time.monotonic()
    with pushcore.Client(fake.url, api_key="psk_x") as client:
        created = client.notifications.create("hi")
    assert time.monotonic() - started >= 1.0  # Retry-After was honoured
    assert created.id == CREATED["id"]
    first, second = (s.headers.get("idempotency-key") for s in fake.seen)
    assert first is not None
    assert first == second
    assert uuid.UUID(first).version == 4


def test_each_call_has_its_own_idempotency_key_and_only_posts_have_one(fake: FakeApi) -> None:
    fake.answer(201, CREATED, times=2)
    fake.answer(200, {"items": [], "nextCursor": None})
    with pushcore.Client(fake.url, api_key="psk_x") as client:
        client.notifications.create("hi")
        client.notifications.create("hi")
        assert list(client.notifications.list()) == []
    keys = [s.headers.get("idempotency-key") for s in fake.seen]
    assert keys[0] != keys[1]
    assert keys[2] is None


def test_the_async_client_retries_the_same_way(fake: FakeApi) -> None:
    fake.answer(503, UNAVAILABLE, Retry_After="1")
    fake.answer(201, CREATED)

    async def program() -> pushcore.NotificationCreatedView:
        async with pushcore.AsyncClient(fake.url, api_key="psk_x") as client:
            return await client.notifications.create("hi")

    assert asyncio.run(program()).status == "QUEUED"
    assert len({s.headers["idempotency-key"] for s in fake.seen}) == 1
    assert len(fake.seen) == 2


def test_a_refused_connection_is_retried_until_the_server_is_up() -> None:
    port = free_port()
    served: list[FakeApi] = []
    finished = threading.Event()

    def serve_later() -> None:
        time.sleep(0.5)  # the client's first attempt finds nobody listening
        with running_fake(port) as late:
            late.answer(200, [])
            served.append(late)
            finished.wait(30)

    thread = threading.Thread(target=serve_later)
    thread.start()
    try:
        with pushcore.Client(f"http://127.0.0.1:{port}", token="t", retries=6) as client:
            assert client.devices.list() == []
    finally:
        finished.set()
        thread.join()
    assert len(served[0].seen) == 1


def test_no_server_at_all_raises_connection_failed() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    client = pushcore.Client(url, token="t", retries=1)
    with client, pytest.raises(pushcore.ConnectionFailed) as info:
        client.devices.list()
    assert isinstance(info.value, pushcore.PushcoreError)
    assert info.value.status is None
    assert info.value.message.startswith(f"No answer from GET {url}/api/devices: ")


def test_a_429_raises_rate_limited_once_the_retries_are_spent(fake: FakeApi) -> None:
    fake.answer(429, LIMITED, times=2, Retry_After="1")
    client = pushcore.Client(fake.url, api_key="psk_x", retries=1)
    with client, pytest.raises(pushcore.RateLimited) as info:
        client.notifications.stats()
    assert (info.value.status, info.value.code, info.value.retry_after) == (429, "rate_limited", 1)
    assert info.value.message == "Too many requests"
    assert len(fake.seen) == 2


def test_a_503_raises_unavailable_once_the_retries_are_spent(fake: FakeApi) -> None:
    fake.answer(503, UNAVAILABLE, times=2, Retry_After="1")
    client = pushcore.Client(fake.url, api_key="psk_x", retries=1)
    with client, pytest.raises(pushcore.Unavailable) as info:
        client.notifications.stats()
    assert (info.value.status, info.value.code, info.value.retry_after) == (503, "unavailable", 1)
    assert info.value.message == "Service unavailable"
    assert len(fake.seen) == 2


def test_a_retry_after_too_long_to_wait_is_raised_at_once(fake: FakeApi) -> None:
    fake.answer(429, LIMITED, Retry_After="3600")
    client = pushcore.Client(fake.url, api_key="psk_x")
    with client, pytest.raises(pushcore.RateLimited) as info:
        client.notifications.stats()
    assert info.value.retry_after == 3600
    assert len(fake.seen) == 1


@pytest.mark.parametrize(
    ("status", "body", "error", "code"),
    [
        (
            500,
            {"error": "Internal server error", "code": "internal_error"},
            pushcore.ServerError,
            "internal_error",
        ),
        (502, "Bad gateway", pushcore.ServerError, None),
        (409, {"error": "Something new", "code": "brand_new"}, pushcore.Conflict, "brand_new"),
        (400, {"error": "Bad JSON", "code": "invalid_json"}, pushcore.InvalidJson, "invalid_json"),
        (
            405,
            {"error": "Method not allowed", "code": "method_not_allowed"},
            pushcore.MethodNotAllowed,
            "method_not_allowed",
        ),
        (
            422,
            {"error": "Other body", "code": "idempotency_key_reused"},
            pushcore.IdempotencyKeyReused,
            "idempotency_key_reused",
        ),
        (
            409,
            {"error": "In use", "code": "idempotency_key_in_use"},
            pushcore.IdempotencyKeyInUse,
            "idempotency_key_in_use",
        ),
    ],
)
def test_error_answers_are_not_retried_and_map_by_code_then_status(
    fake: FakeApi, status: int, body: Any, error: type[pushcore.PushcoreError], code: str | None
) -> None:
    fake.answer(status, body)
    with pushcore.Client(fake.url, api_key="psk_x") as client, pytest.raises(error) as info:
        client.notifications.create("hi")
    assert type(info.value) is error
    assert info.value.status == status
    if code is not None:
        assert info.value.code == code
        assert info.value.message == body["error"]
    assert len(fake.seen) == 1


@pytest.mark.parametrize(
    ("call", "sent"),
    [
        (lambda c: c.devices.list(), {"x-api-key"}),  # either: the key wins
        (lambda c: c.streams.list(), {"x-api-key"}),
        (lambda c: c.notifications.stats(), {"x-api-key"}),  # key only
        (lambda c: c.keys.list(), {"authorization"}),  # user token only
        (lambda c: c.streams.subscriptions(), {"authorization"}),
    ],
)
def test_each_endpoint_gets_the_credential_it_takes(
    fake: FakeApi, call: Any, sent: set[str]
) -> None:
    fake.answer(200, {"error": "parse fails, headers are what matter"})
    client = pushcore.Client(fake.url, api_key="psk_x", token="jwt")
    with client, pytest.raises(pushcore.PushcoreError):
        call(client)
    headers = fake.seen[0].headers
    assert {h for h in ("x-api-key", "authorization") if h in headers} == sent
    assert headers.get("authorization", "Bearer jwt") == "Bearer jwt"


def test_an_id_stays_one_path_segment(fake: FakeApi) -> None:
    fake.answer(404, {"error": "Notification not found", "code": "not_found"})
    with pushcore.Client(fake.url, api_key="psk_x") as client, pytest.raises(pushcore.NotFound):
        client.notifications.get("../keys")
    assert fake.seen[0].path == "/api/notifications/..%2Fkeys"


def test_a_mock_transport_stands_in_for_the_server() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.headers["x-api-key"] == "psk_x"
        return httpx.Response(200, json={"success": True, "id": "dev_1"})

    with pushcore.Client(
        "http://pushcore.test", api_key="psk_x", transport=httpx.MockTransport(handler)
    ) as client:
        assert client.devices.remove("dev_1") == pushcore.DeletedView(True, "dev_1")
