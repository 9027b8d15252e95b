"""The webhook gateway against real loopback receivers (plain HTTP and HTTPS).

Nothing of our HTTP stack is mocked: the gateway posts with its own real
client session to servers listening on 127.0.0.1, through the SSRF guard
and the address pinning of ``pushcore.outbound.guard``.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta, timezone
from email.utils import format_datetime

import attrs
import pytest

from pushcore.domain.model import StreamRef
from pushcore.domain.outcomes import Delivered, Dispatch, Failed, Outcome, Retry, TokenInvalid
from pushcore.gateways.webhook import USER_AGENT, WebhookGateway
from pushcore.outbound.guard import NetworkGuard
from tests.fakes.clock import FakeClock
from tests.fakes.icon_server import IconServer, Route, running_icon_server
from tests.fakes.receiver import Receiver, running_receiver
from tests.gateways.support import (
    closed_port,
    dispatch,
    localhost_address,
    make_ca,
    notification,
    running_fast_receiver,
    running_https_receiver,
    silent_listener,
)

PRIVATE_REFUSAL = "must not point at a private, loopback or link-local address"


def make_gateway(
    *,
    guard: NetworkGuard | None = None,
    clock: FakeClock | None = None,
    timeout: float = 5.0,
    tls: ssl.SSLContext | None = None,
    concurrency: int = 64,
) -> WebhookGateway:
    """A gateway as bootstrap builds one, with test knobs (loopback allowed by default)."""
    return WebhookGateway(
        guard or NetworkGuard(allow_private=True),
        clock or FakeClock(),
        tls=tls,
        timeout=timeout,
        connect_timeout=min(timeout, 5.0),
        concurrency=concurrency,
    )


def send(
    dispatches: Sequence[Dispatch],
    *,
    guard: NetworkGuard | None = None,
    clock: FakeClock | None = None,
    timeout: float = 5.0,
    tls: ssl.SSLContext | None = None,
    concurrency: int = 64,
) -> list[Outcome]:
    """Run one ``send`` on a fresh gateway in a fresh event loop, closing it afterwards."""
    gateway = make_gateway(
        guard=guard, clock=clock, timeout=timeout, tls=tls, concurrency=concurrency
    )

    async def go() -> list[Outcome]:
        try:
            return list(await gateway.send(dispatches))
        finally:
            await gateway.aclose()

    return asyncio.run(go())


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """The scripted webhook receiver of ``tests.fakes.receiver`` on loopback.

    Served by ``running_fast_receiver``: ``running_receiver`` keeps
    socketserver's backlog of 5 (dozens of simultaneous posts get connection
    resets) and takes up to 0.5 s to shut down.
    """
    with running_fast_receiver() as running:
        yield running


def test_the_stock_receiver_runner_works_too() -> None:
    with running_receiver() as receiver:
        assert send([dispatch(receiver.url())]) == [Delivered()]
        assert len(receiver.delivered("/hook")) == 1


@pytest.fixture
def slow_server() -> Iterator[IconServer]:
    """A scripted server for answers the receiver cannot give (slow ones)."""
    with running_icon_server() as running:
        yield running


# -- the request ----------------------------------------------------------------


def test_posts_the_neutral_payload_as_json(receiver: Receiver) -> None:
    note = attrs.evolve(
        notification(
            "ntf_payload",
            metadata={"env": "prod", "region": "eu-west"},
            sender_name="CI",
            sender_icon="https://cdn.example/ci.png",
            stream=StreamRef(id="str_1", name="Deploys", code="DEPLOY42"),
        ),
        collapse_key="deploy-main",
        renotify=False,
    )

    outcomes = send([dispatch(receiver.url("/hook"), note)])

    assert outcomes == [Delivered()]
    [request] = receiver.requests
    assert request.path == "/hook"
    assert request.body == {
        "notificationId": "ntf_payload",
        "title": "Deploy finished",
        "body": "main is live",
        "iconStyle": "terminal",
        "sound": "soft",
        "priority": "high",
        "metadata": {"env": "prod", "region": "eu-west"},
        "sender": {"name": "CI", "icon": "https://cdn.example/ci.png"},
        "stream": {"name": "Deploys", "code": "DEPLOY42"},
        "scheduledAt": "2026-11-21T10:15:30.123Z",
        # A webhook device replaces what it showed with the same key (API.md).
        "event": "notification",
        "collapseKey": "deploy-main",
        "revision": 1,
        "renotify": False,
        "receipt": None,
        "expiresAt": None,
    }
    assert request.headers["content-type"] == "application/json"
    assert request.headers["user-agent"] == USER_AGENT
    assert request.headers["host"] == f"127.0.0.1:{receiver.port}"


@pytest.mark.parametrize(
    ("sender_name", "sender_icon", "expected"),
    [
        (None, None, None),
        ("CI", None, {"name": "CI", "icon": None}),
        (None, "https://cdn.example/i.png", {"name": None, "icon": "https://cdn.example/i.png"}),
    ],
)
def test_sender_is_null_or_has_a_null_half(
    receiver: Receiver,
    sender_name: str | None,
    sender_icon: str | None,
    expected: dict[str, str | None] | None,
) -> None:
    note = notification(sender_name=sender_name, sender_icon=sender_icon)

    assert send([dispatch(receiver.url(), note)]) == [Delivered()]

    [request] = receiver.requests
    assert request.body["sender"] == expected
    assert request.body["stream"] is None
    assert request.body["metadata"] == {}
    assert "sender" in request.body
    assert "stream" in request.body


@pytest.mark.parametrize(
    ("scheduled_at", "expected"),
    [
        (datetime(2026, 11, 21, 10, 15, 30, tzinfo=UTC), "2026-11-21T10:15:30.000Z"),
        (
            datetime(2026, 11, 21, 11, 15, 30, 5999, tzinfo=timezone(timedelta(hours=1))),
            "2026-11-21T10:15:30.005Z",
        ),
    ],
)
def test_scheduled_at_is_utc_with_milliseconds(
    receiver: Receiver, scheduled_at: datetime, expected: str
) -> None:
    send([dispatch(receiver.url(), notification(scheduled_at=scheduled_at))])

    assert receiver.requests[0].body["scheduledAt"] == expected


def test_the_body_is_compact_utf8_json(receiver: Receiver) -> None:
    note = notification(title="Déploiement ✓", body='quote " and \\ backslash')

    send([dispatch(receiver.url(), note)])

    [request] = receiver.requests
    assert request.body["title"] == "Déploiement ✓"
    assert request.body["body"] == 'quote " and \\ backslash'
    assert request.headers["content-length"] == str(
        len(json.dumps(request.body, separators=(",", ":")).encode())
    )


def test_host_header_names_the_url_host_while_connecting_to_the_checked_address(
    receiver: Receiver,
) -> None:
    # The receiver listens only on the address ``localhost`` resolves to; the
    # request reaches it, and still says which host it was meant for.
    receiver_url = f"http://localhost:{receiver.port}/hook?topic=deploys"
    if localhost_address() != receiver.host:
        pytest.skip("localhost does not resolve to the receiver's address here")

    assert send([dispatch(receiver_url)]) == [Delivered()]

    [request] = receiver.requests
    assert request.path == "/hook?topic=deploys"
    assert request.headers["host"] == f"localhost:{receiver.port}"


def test_default_path_is_slash(receiver: Receiver) -> None:
    assert send([dispatch(f"http://127.0.0.1:{receiver.port}")]) == [Delivered()]
    assert receiver.requests[0].path == "/"
    assert receiver.requests[0].headers["host"] == f"127.0.0.1:{receiver.port}"


# -- answers --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (200, Delivered()),
        (201, Delivered()),
        (202, Delivered()),
        (204, Delivered()),
        (404, TokenInvalid("Not Found")),
        (410, TokenInvalid("Gone")),
        (400, Failed("Bad Request")),
        (401, Failed("Unauthorized")),
        (403, Failed("Forbidden")),
        (500, Retry("Internal Server Error", None)),
        (502, Retry("Bad Gateway", None)),
        (503, Retry("Service Unavailable", None)),
        (429, Retry("Too Many Requests", None)),
    ],
)
def test_status_codes_map_to_outcomes(receiver: Receiver, status: int, expected: Outcome) -> None:
    receiver.answer("/hook", status)

    assert send([dispatch(receiver.url())]) == [expected]
    assert len(receiver.requests) == 1


def test_429_retry_after_seconds(receiver: Receiver) -> None:
    receiver.answer("/hook", 429, Retry_After="7")

    [outcome] = send([dispatch(receiver.url())])

    assert outcome == Retry("Too Many Requests", 7)
    assert isinstance(outcome, Retry)
    assert outcome.after == 7.0


def test_503_retry_after_http_date_counts_from_the_clock(receiver: Receiver) -> None:
    clock = FakeClock(datetime(2027, 3, 4, 5, 6, 7, tzinfo=UTC))
    receiver.answer(
        "/hook", 503, Retry_After=format_datetime(clock.now() + timedelta(seconds=90), usegmt=True)
    )

    assert send([dispatch(receiver.url())], clock=clock) == [Retry("Service Unavailable", 90.0)]


def test_retry_after_in_the_past_is_zero_and_garbage_is_ignored(receiver: Receiver) -> None:
    clock = FakeClock()
    past = format_datetime(clock.now() - timedelta(minutes=5), usegmt=True)
    receiver.answer("/past", 503, Retry_After=past)
    receiver.answer("/garbage", 503, Retry_After="soon, maybe")

    outcomes = send(
        [
            dispatch(receiver.url("/past"), suffix="a"),
            dispatch(receiver.url("/garbage"), suffix="b"),
        ],
        clock=clock,
    )

    assert outcomes == [Retry("Service Unavailable", 0.0), Retry("Service Unavailable", None)]


def test_redirects_are_not_followed(receiver: Receiver) -> None:
    # Following one would post the payload to an address the guard never saw.
    receiver.answer("/hook", 307, Location=receiver.url("/elsewhere"))

    assert send([dispatch(receiver.url())]) == [Failed("Temporary Redirect")]
    assert receiver.to("/elsewhere") == []


def test_connection_refused_is_retried() -> None:
    url = f"http://127.0.0.1:{closed_port()}/hook"

    assert send([dispatch(url)]) == [Retry("Webhook unreachable")]


def test_a_receiver_that_never_answers_times_out() -> None:
    with silent_listener() as port:
        started = time.monotonic()
        outcomes = send([dispatch(f"http://127.0.0.1:{port}/hook")], timeout=0.2)
        elapsed = time.monotonic() - started

    assert outcomes == [Retry("Webhook timed out")]
    assert elapsed < 3.0


def test_a_slow_answer_within_the_timeout_is_delivered(slow_server: IconServer) -> None:
    url = slow_server.route("/hook", Route(status=204, delay=0.2))

    assert send([dispatch(url)], timeout=2.0) == [Delivered()]


# -- SSRF -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "http://127.0.0.1:{port}/hook",
        "http://localhost:{port}/hook",
        "http://[::ffff:127.0.0.1]:{port}/hook",
        "https://127.0.0.1:{port}/hook",
    ],
)
def test_private_targets_are_refused_without_a_request(receiver: Receiver, template: str) -> None:
    url = template.format(port=receiver.port)

    [outcome] = send([dispatch(url)], guard=NetworkGuard(allow_private=False))

    assert isinstance(outcome, Failed)
    assert outcome.reason.startswith("Webhook refused")
    assert outcome.reason == f"Webhook refused: {PRIVATE_REFUSAL}"
    assert receiver.requests == []


@pytest.mark.parametrize(
    "url", ["http://169.254.169.254/latest/meta-data/", "http://[::1]/hook", "http://10.0.0.1/"]
)
def test_metadata_and_private_ranges_are_refused(url: str) -> None:
    outcomes = send([dispatch(url)], guard=NetworkGuard(allow_private=False), timeout=0.5)

    assert outcomes == [Failed(f"Webhook refused: {PRIVATE_REFUSAL}")]


def test_a_non_http_url_is_refused() -> None:
    outcomes = send([dispatch("ftp://127.0.0.1/hook")])

    assert outcomes == [Failed("Webhook refused: must be an http or https URL")]


def test_refusals_do_not_stop_the_other_dispatches(receiver: Receiver) -> None:
    guard = NetworkGuard(allow_private=True)
    outcomes = send(
        [
            dispatch("gopher://127.0.0.1/", suffix="a"),
            dispatch(receiver.url("/ok"), suffix="b"),
        ],
        guard=guard,
    )

    assert outcomes == [Failed("Webhook refused: must be an http or https URL"), Delivered()]
    assert [r.path for r in receiver.requests] == ["/ok"]


def test_every_dispatch_to_a_refused_host_is_refused() -> None:
    # One check for the batch's host; the posts after the first take its refusal
    # once it is done.
    outcomes = send([dispatch("gopher://127.0.0.1/", suffix=str(n)) for n in range(3)])

    assert outcomes == [Failed("Webhook refused: must be an http or https URL")] * 3


def test_a_receivers_cookies_are_not_sent_back(receiver: Receiver) -> None:
    # The session is shared by every account's webhooks: a cookie one receiver
    # sets must never travel with the next post (to it or to another URL there).
    gateway = make_gateway()
    receiver.answer("/a", 200, Set_Cookie="session=secret; Path=/")

    async def go() -> None:
        try:
            for path in ("/a", "/a", "/b"):
                assert list(await gateway.send([dispatch(receiver.url(path))])) == [Delivered()]
        finally:
            await gateway.aclose()

    asyncio.run(go())
    assert [r.path for r in receiver.requests] == ["/a", "/a", "/b"]
    assert all("cookie" not in r.headers for r in receiver.requests)


# -- many at once ---------------------------------------------------------------


def test_many_dispatches_are_all_posted_and_answered_in_order(receiver: Receiver) -> None:
    statuses = [200, 410, 500, 400, 204] * 12
    for index, status in enumerate(statuses):
        receiver.answer(f"/d/{index}", status)
    dispatches = [
        dispatch(receiver.url(f"/d/{index}"), suffix=str(index)) for index in range(len(statuses))
    ]

    outcomes = send(dispatches)

    expected: dict[int, Outcome] = {
        200: Delivered(),
        204: Delivered(),
        410: TokenInvalid("Gone"),
        500: Retry("Internal Server Error", None),
        400: Failed("Bad Request"),
    }
    assert outcomes == [expected[status] for status in statuses]
    assert len(receiver.requests) == len(statuses)
    by_path = {r.path: r.body["notificationId"] for r in receiver.requests}
    assert by_path == {f"/d/{i}": f"ntf_{i}" for i in range(len(statuses))}


def test_dispatches_are_posted_concurrently(slow_server: IconServer) -> None:
    url = slow_server.route("/slow", Route(status=200, delay=0.3))
    dispatches = [dispatch(url, suffix=str(i)) for i in range(20)]

    started = time.monotonic()
    outcomes = send(dispatches)
    elapsed = time.monotonic() - started

    assert outcomes == [Delivered()] * 20
    assert slow_server.count("/slow") == 20
    assert elapsed < 2.0  # one after the other would take 6 s


def test_concurrency_is_bounded(slow_server: IconServer) -> None:
    url = slow_server.route("/slow", Route(status=200, delay=0.15))
    dispatches = [dispatch(url, suffix=str(i)) for i in range(6)]

    started = time.monotonic()
    outcomes = send(dispatches, concurrency=2)
    elapsed = time.monotonic() - started

    assert outcomes == [Delivered()] * 6
    assert elapsed >= 0.4  # three rounds of two


def test_waiting_for_a_free_slot_does_not_count_as_the_receivers_time(
    slow_server: IconServer,
) -> None:
    # Each answer takes 0.25 s, well inside the 0.6 s timeout; two at a time,
    # the third pair starts at 0.5 s and ends at 0.75 s.
    url = slow_server.route("/slow", Route(status=200, delay=0.25))
    dispatches = [dispatch(url, suffix=str(i)) for i in range(6)]

    outcomes = send(dispatches, timeout=0.6, concurrency=2)

    assert outcomes == [Delivered()] * 6


def test_a_trickling_answer_is_cut_off_at_the_overall_timeout(slow_server: IconServer) -> None:
    # A byte every 50 ms never trips a per-read timeout; the answer takes ~3 s in all.
    url = slow_server.route("/hook", Route(status=200, head_trickle=0.05))

    started = time.monotonic()
    outcomes = send([dispatch(url)], timeout=0.3)
    elapsed = time.monotonic() - started

    assert outcomes == [Retry("Webhook timed out")]
    assert elapsed < 1.5


def test_a_trickling_body_after_a_prompt_status_does_not_hold_the_delivery(
    slow_server: IconServer,
) -> None:
    # The status is the answer: a receiver's body is not waited for.
    url = slow_server.route(
        "/hook", Route(status=200, body=b"x" * 30, chunked=True, chunk_size=1, trickle=0.1)
    )

    started = time.monotonic()
    outcomes = send([dispatch(url)], timeout=5.0)
    elapsed = time.monotonic() - started

    assert outcomes == [Delivered()]
    assert elapsed < 1.5


# -- HTTPS ----------------------------------------------------------------------


def test_https_delivery_verifies_the_certificate_of_the_url_host() -> None:
    tls = make_ca()
    with running_https_receiver(tls, "localhost") as https:
        outcomes = send([dispatch(https.url("localhost"))], tls=tls.client_context)

    assert outcomes == [Delivered()]
    [request] = https.receiver.requests
    assert request.headers["host"] == f"localhost:{https.port}"
    assert request.body["notificationId"] == "ntf_1"
    # Connected to the resolved address, but asked for (and verified) "localhost".
    assert https.server_names == ["localhost"]


def test_https_with_a_certificate_for_another_name_is_not_delivered() -> None:
    tls = make_ca()
    with running_https_receiver(tls, "other.example") as https:
        outcomes = send([dispatch(https.url("localhost"))], tls=tls.client_context)

    assert outcomes == [Retry("Webhook unreachable")]
    assert https.receiver.requests == []


def test_https_by_address_is_verified_against_the_address() -> None:
    # The certificate names only "localhost": a URL naming the IP must not pass,
    # although the connection goes to the very same socket.
    tls = make_ca()
    with running_https_receiver(tls, "localhost") as https:
        url = https.url(https.receiver.host)
        outcomes = send([dispatch(url)], tls=tls.client_context)

    assert outcomes == [Retry("Webhook unreachable")]
    assert https.receiver.requests == []


def test_https_with_an_untrusted_ca_is_not_delivered() -> None:
    tls = make_ca()
    with running_https_receiver(tls, "localhost") as https:
        outcomes = send([dispatch(https.url("localhost"))], tls=make_ca().client_context)

    assert outcomes == [Retry("Webhook unreachable")]
    assert https.receiver.requests == []


def test_a_connection_verified_for_one_host_is_not_reused_for_another() -> None:
    tls = make_ca()
    with running_https_receiver(tls, "localhost") as https:
        gateway = make_gateway(tls=tls.client_context)

        async def go() -> list[Outcome]:
            try:
                first = await gateway.send([dispatch(https.url("localhost"), suffix="a")])
                # Same address and port, another name the certificate does not cover.
                second = await gateway.send(
                    [dispatch(https.url(https.receiver.host, "/other"), suffix="b")]
                )
                return [*first, *second]
            finally:
                await gateway.aclose()

        outcomes = asyncio.run(go())

    assert outcomes[0] == Delivered()
    assert outcomes[1] == Retry("Webhook unreachable")  # as with a fresh client
    assert https.receiver.to("/other") == []


def test_each_delivery_of_one_notification_carries_its_own_receipt(receiver: Receiver) -> None:
    # Encoded once for the notification, stamped per delivery: the bodies differ
    # by the receipt alone, and a sender's text that looks like one is left alone.
    note = notification("ntf_fanout", metadata={"receipt": "rct_" + "A" * 58})
    first, second = (
        attrs.evolve(dispatch(receiver.url(f"/{n}"), note, str(n)), receipt=token)
        for n, token in ((1, "rct_" + "a" * 58), (2, "rct_" + "b" * 58))
    )

    assert send([first, second]) == [Delivered(), Delivered()]

    bodies = {r.path: r.body for r in receiver.requests}
    assert bodies["/1"]["receipt"] == first.receipt
    assert bodies["/2"]["receipt"] == second.receipt
    assert bodies["/1"]["metadata"] == {"receipt": "rct_" + "A" * 58}
    assert {k: v for k, v in bodies["/1"].items() if k != "receipt"} == {
        k: v for k, v in bodies["/2"].items() if k != "receipt"
    }
