"""The FCM gateway against a fake of Google's token endpoint and FCM's v1 API over HTTPS.

Nothing of our client is mocked: the gateway signs real RS256 assertions,
the fake verifies them against the service account's public key, issues
access tokens that expire by the test's clock, and checks every message
against the v1 schema before recording it.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import Awaitable, Callable, Iterator
from datetime import timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any, TypeVar

import attrs
import pytest
from joserfc import jwt
from joserfc.jwk import RSAKey

from pushcore.config import load_settings
from pushcore.domain.model import Notification, Platform, Priority, StreamRef
from pushcore.domain.outcomes import Delivered, Dispatch, Failed, Outcome, Retry, TokenInvalid
from pushcore.gateways.fcm import FCM_SCOPE, FcmGateway, ServiceAccount
from tests.fakes.clock import FakeClock
from tests.fakes.fcm_server import (
    FcmServer,
    Injected,
    fcm_error,
    fcm_error_body,
    make_service_account,
    running_fcm_server,
)
from tests.gateways.support import (
    Tls,
    closed_port,
    dispatch,
    make_ca,
    notification,
    silent_listener,
)

T = TypeVar("T")

# Generating RSA keys is slow: one for the whole module.
KEY = RSAKey.generate_key(2048)


@pytest.fixture(scope="module")
def tls() -> Tls:
    """A CA whose certificate for 127.0.0.1 the fake serves."""
    return make_ca()


@pytest.fixture
def clock() -> FakeClock:
    """The clock shared by the gateway and the fake (token expiry follows it)."""
    return FakeClock()


@pytest.fixture
def fcm(tls: Tls, clock: FakeClock) -> Iterator[FcmServer]:
    """A running fake."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.ca.issue_cert("127.0.0.1").configure_cert(context)
    with running_fcm_server(context, clock) as server:
        yield server


@pytest.fixture
def account(fcm: FcmServer) -> dict[str, str]:
    """A service account the fake trusts, its token_uri on the fake."""
    return fcm.service_account(key=KEY)


def android(token: str, note: Notification | None = None, suffix: str = "1") -> Dispatch:
    """One delivery of ``note`` (a default one) to an Android device with ``token``."""
    made = dispatch(token, note, suffix)
    return attrs.evolve(made, device=attrs.evolve(made.device, platform=Platform.ANDROID))


def many(count: int) -> list[Dispatch]:
    """Deliveries of one notification to ``count`` devices (tokens ``tok-0``...)."""
    note = notification("ntf_1")
    return [android(f"tok-{i}", note, str(i)) for i in range(count)]


def run(gw: FcmGateway, body: Callable[[FcmGateway], Awaitable[T]]) -> T:
    """Run ``body`` with the gateway in a fresh event loop, closing the gateway afterwards."""

    async def go() -> T:
        try:
            return await body(gw)
        finally:
            await gw.aclose()

    return asyncio.run(go())


@pytest.fixture
def make(
    fcm: FcmServer, account: dict[str, str], clock: FakeClock, tls: Tls
) -> Callable[..., FcmGateway]:
    """Build a gateway on the fake, trusting the test CA (``options`` override)."""

    def build(**options: Any) -> FcmGateway:
        options = {"service_account": account, "base_url": fcm.base_url, **options}
        return FcmGateway(clock=clock, tls=tls.client_context, **options)

    return build


@pytest.fixture
def send(make: Callable[..., FcmGateway]) -> Callable[..., list[Outcome]]:
    """One ``send`` of the dispatches through a fresh gateway (``options`` as for make)."""

    def go(*dispatches: Dispatch, **options: Any) -> list[Outcome]:
        async def once(gw: FcmGateway) -> list[Outcome]:
            return list(await gw.send(dispatches))

        return run(make(**options), once)

    return go


# The message ----------------------------------------------------------------------------


DEFAULT_DATA = {
    "notificationId": "ntf_1",
    "title": "Deploy finished",
    "body": "main is live",
    "iconStyle": "terminal",
    "sound": "soft",
    "priority": "high",
    "metadata": "{}",
}


def test_the_exact_message_of_a_default_notification(fcm: FcmServer, send: Any) -> None:
    assert send(android("tok-a", notification("ntf_1"))) == [Delivered()]
    assert fcm.messages() == [
        {"token": "tok-a", "data": DEFAULT_DATA, "android": {"priority": "HIGH"}}
    ]


@pytest.mark.parametrize(
    ("priority", "expected"),
    [("low", "NORMAL"), ("normal", "HIGH"), ("high", "HIGH"), ("critical", "HIGH")],
)
def test_android_priority(fcm: FcmServer, send: Any, priority: str, expected: str) -> None:
    send(android("tok-a", notification(priority=Priority(priority))))
    (message,) = fcm.messages()
    assert message["android"] == {"priority": expected}
    assert message["data"]["priority"] == priority


def test_sender_stream_and_metadata_are_strings_in_data(fcm: FcmServer, send: Any) -> None:
    note = notification(
        "ntf_1",
        metadata={"env": "prod", "emoji": "🚀"},
        sender_name="CI",
        sender_icon="https://example.com/ci.png",
        stream=StreamRef("str_1", "Deploys", "falcon-7k2q"),
    )
    assert send(android("tok-a", note)) == [Delivered()]
    (message,) = fcm.messages()
    assert message["data"] == {
        **DEFAULT_DATA,
        "metadata": '{"env":"prod","emoji":"🚀"}',
        "senderName": "CI",
        "senderIcon": "https://example.com/ci.png",
        "streamName": "Deploys",
        "streamCode": "falcon-7k2q",
    }
    assert json.loads(message["data"]["metadata"]) == {"env": "prod", "emoji": "🚀"}
    assert all(isinstance(value, str) for value in message["data"].values())
    assert "notification" not in message  # data-only: the app draws it


def test_only_the_sender_half_that_is_set_is_sent(fcm: FcmServer, send: Any) -> None:
    send(
        android("tok-a", notification("ntf_1", sender_name="CI"), "1"),
        android("tok-b", notification("ntf_2", sender_icon="https://x.test/i.png"), "2"),
    )
    by_token = {m["token"]: m["data"] for m in fcm.messages()}
    assert by_token["tok-a"]["senderName"] == "CI"
    assert "senderIcon" not in by_token["tok-a"]
    assert by_token["tok-b"]["senderIcon"] == "https://x.test/i.png"
    assert "senderName" not in by_token["tok-b"]
    assert not {"streamName", "streamCode"} & set(by_token["tok-a"])


def test_the_assertion_carries_what_google_requires(account: dict[str, str]) -> None:
    clock = FakeClock()
    parsed = ServiceAccount.parse(account)
    token = jwt.decode(parsed.assertion(clock.now()), KEY, algorithms=["RS256"])
    now = int(clock.now().timestamp())
    assert token.header == {"alg": "RS256", "typ": "JWT", "kid": account["private_key_id"]}
    assert token.claims == {
        "iss": account["client_email"],
        "scope": FCM_SCOPE,
        "aud": account["token_uri"],
        "iat": now,
        "exp": now + 3600,
    }


# Errors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (fcm_error("UNREGISTERED"), TokenInvalid("UNREGISTERED")),
        (fcm_error("INVALID_ARGUMENT"), TokenInvalid("INVALID_ARGUMENT")),  # about the token
        (fcm_error("SENDER_ID_MISMATCH"), TokenInvalid("SENDER_ID_MISMATCH")),
        (fcm_error("QUOTA_EXCEEDED", "30"), Retry("QUOTA_EXCEEDED", 30.0)),
        (fcm_error("UNAVAILABLE", "7"), Retry("UNAVAILABLE", 7.0)),
        (fcm_error("UNAVAILABLE"), Retry("UNAVAILABLE")),
        (fcm_error("INTERNAL"), Retry("INTERNAL")),
        # A 401, but about the app's APNs/Web Push credentials, not our access token.
        (fcm_error("THIRD_PARTY_AUTH_ERROR"), Failed("THIRD_PARTY_AUTH_ERROR")),
        # INVALID_ARGUMENT about something else than the token: our bug, not a dead device.
        (
            Injected(400, fcm_error_body(400, "INVALID_ARGUMENT", "Bad TTL", "INVALID_ARGUMENT")),
            Failed("INVALID_ARGUMENT"),
        ),
        # A 404 without FcmError (a wrong project) must not deactivate devices.
        (Injected(404, fcm_error_body(404, "NOT_FOUND", "No project")), Failed("NOT_FOUND")),
        (Injected(403, fcm_error_body(403, "PERMISSION_DENIED", "")), Failed("PERMISSION_DENIED")),
        (Injected(502, {}), Retry("Bad Gateway")),
        (Injected(429, {}, "5"), Retry("Too Many Requests", 5.0)),
    ],
)
def test_answers_map_to_outcomes(
    fcm: FcmServer, send: Any, answer: Injected, expected: Outcome
) -> None:
    fcm.inject("tok-bad", answer)
    assert send(android("tok-bad")) == [expected]
    assert fcm.token_requests == 1  # no renewal: none of these blames our access token


def test_retry_after_as_an_http_date_counts_from_the_clock(
    fcm: FcmServer, send: Any, clock: FakeClock
) -> None:
    when = format_datetime(clock.now() + timedelta(seconds=90), usegmt=True)
    fcm.inject("tok-bad", fcm_error("UNAVAILABLE", when))
    assert send(android("tok-bad")) == [Retry("UNAVAILABLE", 90.0)]


def data_bytes(data: dict[str, str]) -> int:
    return sum(len(k.encode()) + len(v.encode()) for k, v in data.items())


def test_a_long_body_is_shortened_to_fcms_size_limit(fcm: FcmServer, send: Any) -> None:
    metadata = {f"k{i}": "v" * 80 for i in range(30)}
    body = "é" * 1500  # two bytes each: the limit counts bytes, not characters
    note = notification(body=body, metadata=metadata)
    assert send(android("tok-a", note)) == [Delivered()]
    (message,) = fcm.messages()
    data = message["data"]
    assert data["body"].endswith("…")
    assert body.startswith(data["body"][:-1])
    assert data["title"] == note.title
    # The longest body that fits: one more character would not.
    assert data_bytes(data) <= 4096 < data_bytes(data) + len("é".encode())
    assert json.loads(data["metadata"]) == metadata


def test_a_message_too_large_without_its_text_fails_unsent(fcm: FcmServer, send: Any) -> None:
    note = notification(metadata={f"k{i}": "v" * 100 for i in range(40)})
    (outcome,) = send(android("tok-a", note))
    assert isinstance(outcome, Failed)
    assert outcome.reason.startswith("FCM payload too large")
    assert fcm.messages() == []


def test_errors_stay_with_their_dispatch(fcm: FcmServer, send: Any) -> None:
    fcm.inject("tok-2", fcm_error("UNREGISTERED"))
    fcm.inject("tok-3", fcm_error("QUOTA_EXCEEDED", "10"))
    outcomes = send(*(android(f"tok-{i}", suffix=str(i)) for i in range(1, 5)))
    assert outcomes == [
        Delivered(),
        TokenInvalid("UNREGISTERED"),
        Retry("QUOTA_EXCEEDED", 10.0),
        Delivered(),
    ]


# The access token ---------------------------------------------------------------------


def test_the_access_token_is_cached_across_sends(fcm: FcmServer, make: Any) -> None:
    # Three sends, each of more messages than the gateway posts at once (64): the token is
    # shared by concurrent posts and kept across sends. (It was 10 sends, a minute of wall
    # on a loaded machine, that proved no more.)
    async def three(gw: FcmGateway) -> list[Outcome]:
        outcomes: list[Outcome] = []
        for _ in range(3):
            outcomes += await gw.send(many(100))
        return outcomes

    assert run(make(), three) == [Delivered()] * 300
    assert fcm.token_requests == 1
    assert len(fcm.messages()) == 300
    assert all(r.access_token == fcm.received[0].access_token for r in fcm.received)


def test_the_token_is_renewed_five_minutes_before_it_expires(
    fcm: FcmServer, make: Any, clock: FakeClock
) -> None:
    async def over_an_hour(gw: FcmGateway) -> list[int]:
        counts = []
        for step in (0, 54 * 60, 2 * 60, 30 * 60, 30 * 60):
            clock.advance(step)
            assert await gw.send([android("tok-a")]) == [Delivered()]
            counts.append(fcm.token_requests)
        return counts

    # At 56 minutes the first token still had 4 to live (the fake would take it).
    assert run(make(), over_an_hour) == [1, 1, 2, 2, 3]
    tokens = [r.access_token for r in fcm.received]
    assert tokens[0] == tokens[1] != tokens[2] == tokens[3] != tokens[4]
    assert fcm.unauthorized == 0


def test_a_short_lived_token_is_renewed_at_half_its_life(
    fcm: FcmServer, make: Any, clock: FakeClock
) -> None:
    fcm.expires_in = 120

    async def go(gw: FcmGateway) -> None:
        await gw.send([android("tok-a")])
        clock.advance(59)
        await gw.send([android("tok-a")])
        assert fcm.token_requests == 1
        clock.advance(1)
        await gw.send([android("tok-a")])

    run(make(), go)
    assert fcm.token_requests == 2


def test_a_401_renews_the_token_once_and_retries(fcm: FcmServer, make: Any) -> None:
    async def go(gw: FcmGateway) -> list[Outcome]:
        await gw.send([android("tok-a")])
        fcm.revoke_tokens()
        return list(await gw.send([android("tok-b", suffix="2")]))

    assert run(make(), go) == [Delivered()]
    assert fcm.token_requests == 2
    assert fcm.unauthorized == 1
    assert fcm.send_requests == 3
    assert [m["token"] for m in fcm.messages()] == ["tok-a", "tok-b"]


def test_concurrent_401s_share_one_renewal(fcm: FcmServer, make: Any) -> None:
    async def go(gw: FcmGateway) -> list[Outcome]:
        await gw.send([android("tok-a")])
        fcm.revoke_tokens()
        return list(await gw.send(many(30)))

    assert run(make(), go) == [Delivered()] * 30
    assert fcm.token_requests == 2
    assert len(fcm.messages()) == 31


def test_a_token_refused_twice_fails_without_looping(fcm: FcmServer, send: Any) -> None:
    fcm.accept_tokens = False
    assert send(android("tok-a")) == [Failed("UNAUTHENTICATED")]
    assert fcm.token_requests == 2
    assert fcm.send_requests == 2


def test_a_refused_grant_fails_the_batch_with_googles_reason(fcm: FcmServer, send: Any) -> None:
    fcm.fail_token_requests(400, {"error": "invalid_grant", "error_description": "Bad key"})
    outcomes = send(*many(5))
    assert outcomes == [Failed("FCM auth refused: invalid_grant (Bad key)")] * 5
    assert fcm.token_requests == 1
    assert fcm.send_requests == 0


def test_an_unknown_key_is_refused_by_the_token_endpoint(fcm: FcmServer, send: Any) -> None:
    stranger = make_service_account(fcm.token_uri, key=KEY)  # never trusted by the fake
    assert send(android("tok-a"), service_account=stranger) == [
        Failed("FCM auth refused: invalid_grant (Invalid JWT Signature. (unknown kid))")
    ]


def test_a_token_endpoint_outage_is_retried_in_the_next_batch(fcm: FcmServer, make: Any) -> None:
    fcm.fail_token_requests(503, {"error": "backendError"})

    async def go(gw: FcmGateway) -> tuple[list[Outcome], list[Outcome]]:
        first = list(await gw.send([android("tok-a"), android("tok-b", suffix="2")]))
        return first, list(await gw.send([android("tok-a")]))

    first, second = run(make(), go)
    assert first == [Retry("FCM token endpoint: Service Unavailable")] * 2
    assert second == [Delivered()]
    assert fcm.token_requests == 2


# Connections --------------------------------------------------------------------------


def test_concurrency_is_bounded(fcm: FcmServer, send: Any) -> None:
    fcm.delay = 0.05
    outcomes = send(*many(24), concurrency=4)
    assert outcomes == [Delivered()] * 24
    assert fcm.max_in_flight == 4


def test_a_dead_fcm_is_retried(send: Any) -> None:
    outcomes = send(android("tok-a"), base_url=f"https://127.0.0.1:{closed_port()}")
    assert outcomes == [Retry("FCM unreachable")]


def test_a_dead_token_endpoint_is_retried(send: Any) -> None:
    account = make_service_account(f"https://127.0.0.1:{closed_port()}/token", key=KEY)
    assert send(android("tok-a"), service_account=account) == [
        Retry("FCM token endpoint unreachable")
    ]


def test_a_silent_fcm_times_out(send: Any) -> None:
    with silent_listener() as port:
        outcomes = send(
            android("tok-a"),
            base_url=f"https://127.0.0.1:{port}",
            timeout=0.3,
            connect_timeout=0.3,
        )
    assert outcomes == [Retry("FCM timed out")]


def test_an_empty_batch_costs_nothing(fcm: FcmServer, send: Any) -> None:
    assert send() == []
    assert fcm.token_requests == 0


# Configuration and check --------------------------------------------------------------


def test_from_settings_reads_the_key_file_url_and_ca(
    fcm: FcmServer, account: dict[str, str], clock: FakeClock, tls: Tls, tmp_path: Path
) -> None:
    key_file = tmp_path / "service-account.json"
    key_file.write_text(json.dumps(account))
    ca_file = tmp_path / "ca.pem"
    tls.ca.cert_pem.write_to_path(str(ca_file))
    settings = load_settings(
        env={}, fcm_service_account_file=key_file, fcm_url=fcm.base_url + "/", ca_file=ca_file
    )
    gw = FcmGateway.from_settings(settings, clock)
    line = gw.check()
    assert account["client_email"] in line
    assert account["private_key_id"] in line
    assert f"{fcm.base_url}/v1/projects/pushcore-test/messages:send" in line
    assert run(gw, lambda g: g.send([android("tok-a")])) == [Delivered()]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"type": "authorized_user"}, "not a service account key file"),
        ({"client_email": ""}, "no 'client_email'"),
        ({"private_key": "-----BEGIN PRIVATE KEY-----\nnope"}, "not a PEM RSA private key"),
        ({"private_key": KEY.as_pem(private=False).decode()}, "the private key is needed"),
        ({"token_uri": "http://oauth2.example/token"}, "token_uri must be an https URL"),
    ],
)
def test_a_broken_service_account_is_refused(
    account: dict[str, str], clock: FakeClock, change: dict[str, str], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        FcmGateway(service_account={**account, **change}, base_url="https://f.test", clock=clock)


@pytest.mark.parametrize(
    ("base_url", "message"),
    [("https://fcm.googleapis.com/v1", "without /v1"), ("http://fcm.test", "must be an https URL")],
)
def test_a_base_url_must_be_bare_https(
    account: dict[str, str], clock: FakeClock, base_url: str, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        FcmGateway(service_account=account, base_url=base_url, clock=clock)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "PUSHCORE_FCM_SERVICE_ACCOUNT_FILE: not set"),
        ("{not json", "not a JSON key file"),
        ("[]", "not a JSON object"),
        ('{"type": "service_account"}', "no 'project_id'"),
    ],
)
def test_from_settings_names_the_setting(
    tmp_path: Path, clock: FakeClock, content: str | None, message: str
) -> None:
    key_file = None
    if content is not None:
        key_file = tmp_path / "sa.json"
        key_file.write_text(content)
    settings = load_settings(env={}, fcm_service_account_file=key_file)
    with pytest.raises(ValueError, match=message):
        FcmGateway.from_settings(settings, clock)


def test_each_device_gets_its_own_receipt_in_data(fcm: FcmServer, send: Any) -> None:
    first, second = (
        attrs.evolve(d, receipt=f"rct_{n * 40}") for d, n in zip(many(2), "ab", strict=True)
    )

    assert send(first, second) == [Delivered(), Delivered()]

    by_token = {m["token"]: m["data"] for m in fcm.messages()}
    assert (by_token["tok-0"]["receipt"], by_token["tok-1"]["receipt"]) == (
        first.receipt,
        second.receipt,
    )


def test_a_quiet_push_is_normal_priority_with_quiet_in_data(fcm: FcmServer, send: Any) -> None:
    # Quiet hours in `silent` mode (API.md, "The recipient's time").
    loud = android("tok-a", notification("ntf_1"))
    assert send(attrs.evolve(loud, quiet=True)) == [Delivered()]
    (message,) = fcm.messages()
    assert message == {
        "token": "tok-a",
        "data": {**DEFAULT_DATA, "quiet": "true"},
        "android": {"priority": "NORMAL"},
    }
