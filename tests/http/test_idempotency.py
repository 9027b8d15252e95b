"""Idempotency-Key on POSTs under /api/: replay, mismatch, in use, races, expiry."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from pushcore import build_services, load_settings
from pushcore_http import create_app
from pushcore_http.app import openapi_document
from tests.conftest import Api
from tests.fakes.clock import FakeClock
from tests.fakes.icons import FakeIconProbe

ICON = "https://example.com/held.png"


class HoldingIconProbe(FakeIconProbe):
    """Holds every check of :data:`ICON` until the test lets it go, so that the request
    that asked for it is still being handled meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.go = threading.Event()

    async def check(self, url: str, account_id: str) -> None:
        if url == ICON:
            self.entered.set()
            while not self.go.is_set():
                await asyncio.sleep(0.005)
        await super().check(url, account_id)


@pytest.fixture
def icons() -> HoldingIconProbe:
    return HoldingIconProbe()


@pytest.fixture
def iapi(tmp_path: Path, fake_clock: FakeClock, icons: HoldingIconProbe) -> Iterator[Api]:
    services = build_services(
        load_settings(env={}, data_dir=tmp_path), clock=fake_clock, icons=icons
    )
    with TestClient(create_app(services, run_engine=False)) as client:
        yield Api(client, services)


def post(api: Api, headers: dict[str, str], key: str | None, body: Any) -> httpx.Response:
    extra = {} if key is None else {"Idempotency-Key": key}
    response: httpx.Response = api.client.post(
        "/api/notifications", json=body, headers={**headers, **extra}
    )
    return response


def stored(api: Api, headers: dict[str, str]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = api.client.get("/api/notifications", headers=headers).json()[
        "items"
    ]
    return items


def test_the_same_key_and_body_replays_the_first_answer(iapi: Api) -> None:
    alice = iapi.key("alice")
    first = post(iapi, alice, "k-1", {"title": "once"})
    assert first.status_code == 201
    assert "idempotent-replayed" not in first.headers
    again = post(iapi, alice, "k-1", {"title": "once"})
    assert again.status_code == 201
    assert again.headers["idempotent-replayed"] == "true"
    assert again.content == first.content
    assert again.headers["content-type"] == "application/json"
    assert [n["id"] for n in stored(iapi, alice)] == [first.json()["id"]]


def test_a_refusal_is_replayed_too(iapi: Api) -> None:
    alice = iapi.key("alice")
    first = post(iapi, alice, "k-bad", {"title": ""})
    assert first.status_code == 400
    again = post(iapi, alice, "k-bad", {"title": ""})
    assert (again.status_code, again.content) == (400, first.content)
    assert again.headers["idempotent-replayed"] == "true"


def test_the_same_key_with_another_body_is_422(iapi: Api) -> None:
    alice = iapi.key("alice")
    assert post(iapi, alice, "k-2", {"title": "one"}).status_code == 201
    other = post(iapi, alice, "k-2", {"title": "two"})
    assert other.status_code == 422
    assert other.json() == {
        "error": "This Idempotency-Key was already used with a different request",
        "code": "idempotency_key_reused",
    }
    # The same body on another path is another request as well.
    devices = iapi.client.post(
        "/api/devices",
        json={"title": "one"},
        headers={**alice, "Idempotency-Key": "k-2"},
    )
    assert devices.status_code == 422
    assert len(stored(iapi, alice)) == 1


def test_a_key_in_use_is_409_and_the_first_answer_is_kept(
    iapi: Api, icons: HoldingIconProbe
) -> None:
    alice = iapi.key("alice")
    body = {"title": "slow", "senderIcon": ICON}
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(post, iapi, alice, "k-slow", body)
        assert icons.entered.wait(10)
        busy = post(iapi, alice, "k-slow", body)
        icons.go.set()
        created = first.result(10)
    assert busy.status_code == 409
    assert busy.json()["code"] == "idempotency_key_in_use"
    assert created.status_code == 201
    replay = post(iapi, alice, "k-slow", body)
    assert replay.headers["idempotent-replayed"] == "true"
    assert replay.json() == created.json()
    assert len(stored(iapi, alice)) == 1


def test_concurrent_requests_with_one_key_create_one_notification(iapi: Api) -> None:
    alice = iapi.key("alice")
    barrier = threading.Barrier(8)

    def send(_: int) -> httpx.Response:
        barrier.wait(10)
        return post(iapi, alice, "k-race", {"title": "race"})

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(send, range(8)))
    statuses = sorted(a.status_code for a in answers)
    assert set(statuses) <= {201, 409}
    created = [a for a in answers if a.status_code == 201]
    assert len({a.content for a in created}) == 1
    assert sum("idempotent-replayed" not in a.headers for a in created) == 1
    assert len(stored(iapi, alice)) == 1


@pytest.mark.parametrize("key", ["x" * 256, "", "has space", "tab\there", "café"])
def test_a_malformed_key_is_400_and_nothing_is_created(iapi: Api, key: str) -> None:
    alice = iapi.key("alice")
    response = iapi.client.post(
        "/api/notifications",
        json={"title": "t"},
        headers={**alice, "Idempotency-Key": key.encode()},
    )
    assert response.status_code == 400
    assert response.json()["details"][0]["field"] == "Idempotency-Key"
    assert stored(iapi, alice) == []


def test_a_key_of_255_visible_characters_is_accepted(iapi: Api) -> None:
    alice = iapi.key("alice")
    assert post(iapi, alice, "~" * 255, {"title": "t"}).status_code == 201


def test_accounts_do_not_share_keys(iapi: Api) -> None:
    alice, bob = iapi.key("alice"), iapi.key("bob")
    a = post(iapi, alice, "shared", {"title": "same"})
    b = post(iapi, bob, "shared", {"title": "same"})
    assert (a.status_code, b.status_code) == (201, 201)
    assert "idempotent-replayed" not in b.headers
    assert a.json()["id"] != b.json()["id"]
    assert len(stored(iapi, alice)) == len(stored(iapi, bob)) == 1


def test_an_answer_is_replayed_for_24_hours_then_the_key_is_free(
    iapi: Api, fake_clock: FakeClock
) -> None:
    alice = iapi.key("alice")
    first = post(iapi, alice, "k-day", {"title": "daily"})
    fake_clock.advance(timedelta(hours=23, minutes=59))
    assert post(iapi, alice, "k-day", {"title": "daily"}).headers["idempotent-replayed"] == "true"
    assert post(iapi, alice, "k-day", {"title": "other"}).status_code == 422
    fake_clock.advance(timedelta(minutes=2))
    fresh = post(iapi, alice, "k-day", {"title": "other"})
    assert fresh.status_code == 201
    assert "idempotent-replayed" not in fresh.headers
    assert fresh.json()["id"] != first.json()["id"]
    assert len(stored(iapi, alice)) == 2


def test_without_valid_credentials_nothing_is_recorded(iapi: Api) -> None:
    refused = post(iapi, {"X-API-Key": "psk_nope"}, "k-auth", {"title": "t"})
    assert refused.status_code == 401
    with iapi.services.store.read() as tx:
        assert tx.idempotency_keys.get("alice", "k-auth") is None
    alice = iapi.key("alice")
    assert post(iapi, alice, "k-auth", {"title": "t"}).status_code == 201


def test_a_failed_request_releases_its_key(iapi: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    alice = iapi.key("alice")
    real = iapi.services.notifications.create
    calls = 0

    def flaky(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("database went away")
        return real(*args, **kwargs)

    monkeypatch.setattr(iapi.services.notifications, "create", flaky)
    client = TestClient(iapi.client.app, raise_server_exceptions=False)
    failed = client.post(
        "/api/notifications", json={"title": "t"}, headers={**alice, "Idempotency-Key": "k-5xx"}
    )
    assert failed.status_code == 500
    retried = post(iapi, alice, "k-5xx", {"title": "t"})
    assert retried.status_code == 201
    assert "idempotent-replayed" not in retried.headers
    assert len(stored(iapi, alice)) == 1


def test_every_post_under_api_takes_a_key(iapi: Api) -> None:
    user = iapi.token("alice")
    first = iapi.client.post(
        "/api/keys",
        json={"name": "ci", "scopes": ["notifications:read"]},
        headers={**user, "Idempotency-Key": "k-key"},
    )
    again = iapi.client.post(
        "/api/keys",
        json={"name": "ci", "scopes": ["notifications:read"]},
        headers={**user, "Idempotency-Key": "k-key"},
    )
    assert again.headers["idempotent-replayed"] == "true"
    assert again.json()["key"] == first.json()["key"]
    assert len(iapi.client.get("/api/keys", headers=user).json()) == 1


def test_the_document_gives_every_post_under_api_the_header_and_its_answers() -> None:
    document = openapi_document()
    posts = [(p, item["post"]) for p, item in document["paths"].items() if "post" in item]
    # Sign-in, sessions and receipts (no credential, no account) keep no answers.
    unkeyed = ("/api/auth/", "/api/receipts")
    signing_in = [(p, op) for p, op in posts if p.startswith(unkeyed)]
    posts = [(p, op) for p, op in posts if not p.startswith(unkeyed)]
    assert len([p for p, _ in posts if p.startswith("/api/")]) >= 6
    for path, op in signing_in:
        refs = [p.get("$ref") for p in op.get("parameters", [])]
        assert "#/components/parameters/Idempotency-Key" not in refs, path
    for path, op in posts:
        refs = [p.get("$ref") for p in op.get("parameters", [])]
        assert "#/components/parameters/Idempotency-Key" in refs, path
        assert {"409", "422"} <= set(op["responses"]), path
    assert document["components"]["parameters"]["Idempotency-Key"]["in"] == "header"
