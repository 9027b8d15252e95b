"""End to end: streams through a real `pushctl serve` process, real HTTP, real receivers.

Two accounts talk to one server: the creator (API key) and a subscriber (JWT)
whose webhook device is a real receiver on loopback. The stream's icon is
served by a real icon server, so the server's own icon check runs too.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.e2e.server import Server
from tests.fakes.icon_server import IconServer, running_icon_server, tiny_png
from tests.fakes.receiver import Receiver, running_receiver
from tests.support_counts import delivery_counts

pytestmark = pytest.mark.slow

THREADS = 8


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for the module; every test uses accounts of its own."""
    s = Server(tmp_path_factory.mktemp("streams") / "data")
    s.start()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as r:
        yield r


@pytest.fixture
def icons() -> Iterator[IconServer]:
    with running_icon_server() as i:
        yield i


def ok(response: httpx.Response, status: int = 200) -> Any:
    """The JSON body, after checking the status."""
    assert response.status_code == status, response.text
    return response.json()


def notification_settled(server: Server, key: dict[str, str], notification_id: str) -> Any:
    """The notification once it left QUEUED (or as it is after a few seconds)."""
    deadline = time.monotonic() + 10
    while True:
        body = ok(server.request("GET", f"/api/notifications/{notification_id}", headers=key))
        if body["status"] != "QUEUED" or time.monotonic() > deadline:
            return body
        time.sleep(0.05)


def test_a_subscriber_receives_stream_sends_until_it_unsubscribes(
    server: Server, receiver: Receiver, icons: IconServer
) -> None:
    creator = server.key("e2e-creator")
    user = server.user("e2e-subscriber")
    icon = icons.serve("/deploys.png", tiny_png(), "image/png")

    stream = ok(
        server.request(
            "POST",
            "/api/streams",
            json={"name": "Deploys", "description": "every deploy", "iconUrl": icon},
            headers=creator,
        ),
        201,
    )
    assert stream["iconUrl"] == icon
    assert icons.count("/deploys.png") >= 1  # the server checked the icon itself
    code = stream["code"]

    found = ok(server.request("GET", f"/api/streams/lookup/{code}", headers=user))
    assert (found["id"], found["name"], found["subscribers"]) == (stream["id"], "Deploys", 0)
    assert found["isSubscribed"] is False
    subscription = ok(
        server.request("POST", "/api/streams/subscribe", json={"code": code}, headers=user), 201
    )
    assert subscription["stream"]["subscribers"] == 1
    server.webhook(user, receiver.url("/subscriber"))
    server.webhook(creator, receiver.url("/creator"))  # the creator is no subscriber

    first = ok(
        server.request(
            "POST",
            f"/api/streams/{stream['id']}/send",
            json={"title": "Shipped", "body": "v2.0 is live", "priority": "high"},
            headers=creator,
        ),
        201,
    )
    assert first["sent"] == 1
    assert first["subscribers"] == 1
    assert first["stream"] == {"name": "Deploys", "code": code}
    second = ok(
        server.request(
            "POST",
            f"/api/streams/{stream['id']}/send",
            json={"title": "Rolled back", "senderName": "CI Bot"},
            headers=creator,
        ),
        201,
    )
    assert second["sent"] == 1

    assert receiver.wait_for(2, timeout=10, path="/subscriber"), receiver.requests
    arrivals = {r.body["notificationId"]: r for r in receiver.delivered("/subscriber")}
    assert set(arrivals) == {first["notificationId"], second["notificationId"]}
    payload = arrivals[first["notificationId"]].body
    assert payload["title"] == "Shipped"
    assert payload["body"] == "v2.0 is live"
    assert payload["priority"] == "high"
    assert payload["sender"] == {"name": "Deploys", "icon": icon}
    assert payload["stream"] == {"name": "Deploys", "code": code}
    overridden = arrivals[second["notificationId"]].body
    assert overridden["sender"] == {"name": "CI Bot", "icon": icon}
    assert overridden["stream"] == {"name": "Deploys", "code": code}

    shown = notification_settled(server, creator, first["notificationId"])
    assert shown["status"] == "DELIVERED"
    assert shown["deliveries"] == delivery_counts(0, 1, 0)
    assert shown["stream"] == {"id": stream["id"], "name": "Deploys", "code": code}

    gone = server.request(
        "DELETE", f"/api/streams/subscriptions/{subscription['id']}", headers=user
    )
    assert ok(gone) == {"success": True, "id": subscription["id"]}
    after = ok(
        server.request(
            "POST", f"/api/streams/{stream['id']}/send", json={"title": "Anyone?"}, headers=creator
        ),
        201,
    )
    assert (after["sent"], after["subscribers"]) == (0, 0)
    failed = ok(
        server.request("GET", f"/api/notifications/{after['notificationId']}", headers=creator)
    )
    assert (failed["status"], failed["failureReason"]) == ("FAILED", "no_devices")

    time.sleep(0.5)  # anything extra would have arrived by now
    assert len(receiver.to("/subscriber")) == 2
    assert receiver.to("/creator") == []


def concurrently(
    count: int, call: Callable[[httpx.Client, str], httpx.Response], *servers: Server
) -> list[httpx.Response]:
    """``call(client, base_url)`` from ``count`` threads released at the same moment.

    Thread ``i`` talks to ``servers[i % len(servers)]``. Each opens its
    connection first, so the requests themselves leave together.
    """
    barrier = threading.Barrier(count)
    results: list[httpx.Response | BaseException] = [RuntimeError("not run")] * count

    def run(index: int) -> None:
        base = servers[index % len(servers)].base
        with httpx.Client(timeout=10.0) as client:
            try:
                assert client.get(f"{base}/healthz").status_code == 200
                barrier.wait(timeout=10)
                results[index] = call(client, base)
            except BaseException as exc:  # reported by the main thread
                results[index] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    responses: list[httpx.Response] = []
    for result in results:
        if isinstance(result, BaseException):
            raise result
        responses.append(result)
    return responses


def race_to_create(key: dict[str, str], *servers: Server) -> None:
    """``THREADS`` creates at once for one free account: three win, the rest hit the plan."""

    def create(client: httpx.Client, base: str) -> httpx.Response:
        name = f"race {threading.get_ident()}"
        return client.post(f"{base}/api/streams", json={"name": name}, headers=key)

    responses = concurrently(THREADS, create, *servers)
    statuses = Counter(r.status_code for r in responses)
    assert statuses == {201: 3, 403: THREADS - 3}, [r.text for r in responses]
    assert {r.json()["code"] for r in responses if r.status_code == 403} == {"plan_limit"}
    created = {r.json()["id"] for r in responses if r.status_code == 201}
    listed = ok(servers[0].request("GET", "/api/streams", headers=key))
    assert {s["id"] for s in listed} == created
    assert len({s["code"] for s in listed}) == 3


def test_simultaneous_creates_never_exceed_the_free_plan(server: Server) -> None:
    race_to_create(server.key("e2e-racer"), server)


def test_simultaneous_creates_through_two_server_processes(server: Server) -> None:
    """Two `pushctl serve` processes on one database: the limit is the database's decision."""
    second = Server(server.data_dir)
    second.start()
    try:
        race_to_create(server.key("e2e-racer-2"), server, second)
    finally:
        second.stop()


def test_simultaneous_subscribes_make_one_subscription_each(server: Server) -> None:
    creator = server.key("e2e-popular")
    stream = ok(
        server.request("POST", "/api/streams", json={"name": "Popular"}, headers=creator), 201
    )
    fan = server.user("e2e-fan")
    many = [server.user(f"e2e-fan-{i}") for i in range(THREADS)]

    same_user = concurrently(
        THREADS,
        lambda client, base: client.post(
            f"{base}/api/streams/subscribe", json={"code": stream["code"]}, headers=fan
        ),
        server,
    )
    assert Counter(r.status_code for r in same_user) == {201: 1, 409: THREADS - 1}
    assert len(ok(server.request("GET", "/api/streams/subscriptions", headers=fan))) == 1

    turns = iter(many)
    lock = threading.Lock()

    def subscribe_next(client: httpx.Client, base: str) -> httpx.Response:
        with lock:
            headers = next(turns)
        return client.post(
            f"{base}/api/streams/subscribe", json={"code": stream["code"]}, headers=headers
        )

    others = concurrently(THREADS, subscribe_next, server)
    assert Counter(r.status_code for r in others) == {201: THREADS}
    listed = ok(server.request("GET", "/api/streams", headers=creator))
    assert [s["subscribers"] for s in listed] == [THREADS + 1]
