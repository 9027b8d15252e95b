"""The APNs gateway against the fake APNs of ``tests.fakes.apns_server``.

The fake speaks HTTP/2 over TLS on loopback and checks what Apple checks
(provider token signature and age, headers, path, payload size), so these
tests see the requests exactly as APNs would.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import json
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import attrs
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from pushcore.config import Settings
from pushcore.domain.model import (
    Delivery,
    Device,
    IconStyle,
    Notification,
    Platform,
    Priority,
    Sound,
    StreamRef,
)
from pushcore.domain.outcomes import Delivered, Dispatch, Failed, Outcome, Retry, TokenInvalid
from pushcore.domain.states import DeliveryStatus
from pushcore.gateways.apns import PRODUCTION_URL, SANDBOX_URL, ApnsGateway, encode_payload
from tests.fakes.apns_server import Answer, ApnsRequest, FakeApns, running_apns
from tests.fakes.clock import FakeClock
from tests.gateways.support import CREATED, closed_port, notification, silent_listener


async def until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    """Wait, polling, until ``condition`` holds; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        await asyncio.sleep(0.005)


T = TypeVar("T")
KEY_ID, TEAM_ID, TOPIC = "KEY9876543", "TEAM123456", "com.example.pushcore"
CRITICAL_SOUND = {"critical": 1, "name": "default", "volume": 1.0}
SOUNDS: dict[Sound, Any] = {
    Sound.DEFAULT: "default",
    Sound.SOFT: "soft.caf",
    Sound.CRITICAL: CRITICAL_SOUND,
}
LEVELS = {
    Priority.LOW: ("5", "passive"),
    Priority.NORMAL: ("10", "active"),
    Priority.HIGH: ("10", "time-sensitive"),
    Priority.CRITICAL: ("10", "critical"),
}
PKCS8 = (serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8)


def p8_key() -> bytes:
    """A fresh EC P-256 key as a .p8 file holds it (PKCS#8 PEM)."""
    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(*PKCS8, serialization.NoEncryption())


KEY = p8_key()


def device_token(name: str) -> str:
    """A 64-hex-digit device token, like an iPhone's."""
    return hashlib.sha256(name.encode()).hexdigest()


def ios(note: Notification, name: str, token: str | None = None) -> Dispatch:
    """A delivery of ``note`` to an iOS device whose token derives from ``name``."""
    token = token or device_token(name)
    device = Device(f"dev_{name}", "acc_1", Platform.IOS, token, None, CREATED)
    status = DeliveryStatus.IN_FLIGHT
    delivery = Delivery(f"dlv_{name}", note.id, "acc_1", device.id, status, CREATED, attempts=1)
    return Dispatch(delivery, device, note)


def many(count: int, prefix: str = "d", note: Notification | None = None) -> list[Dispatch]:
    """``count`` deliveries of one notification, to devices ``<prefix>0``..."""
    return [ios(note or notification(), f"{prefix}{i}") for i in range(count)]


@pytest.fixture
def clock() -> FakeClock:
    """The clock shared by the gateway and the fake (which checks token ages with it)."""
    return FakeClock()


@pytest.fixture
def apns(clock: FakeClock) -> Iterator[FakeApns]:
    """A running fake APNs trusting KEY."""
    options = {"key_id": KEY_ID, "team_id": TEAM_ID, "topic": TOPIC, "clock": clock}
    with running_apns(key_pem=KEY, **options) as fake:
        yield fake


def gateway_for(apns: FakeApns, clock: FakeClock, **options: Any) -> ApnsGateway:
    """A gateway pointed at the fake and trusting its CA."""
    options = {"key_pem": KEY, "tls": apns.client_context(), **options}
    return ApnsGateway(
        key_id=KEY_ID, team_id=TEAM_ID, topic=TOPIC, base_url=apns.url, clock=clock, **options
    )


def drive(gateway: ApnsGateway, scenario: Callable[[ApnsGateway], Awaitable[T]]) -> T:
    """Run ``scenario`` in a fresh event loop, closing the gateway afterwards."""

    async def go() -> T:
        try:
            return await scenario(gateway)
        finally:
            await gateway.aclose()

    return asyncio.run(go())


def send(gateway: ApnsGateway, dispatches: list[Dispatch]) -> list[Outcome]:
    """One send on a fresh loop."""

    async def one(gw: ApnsGateway) -> list[Outcome]:
        return list(await gw.send(dispatches))

    return drive(gateway, one)


def tries(apns: FakeApns, name: str) -> list[ApnsRequest]:
    """The requests the fake got for the device ``name``, in order."""
    return [r for r in apns.requests if r.token == device_token(name)]


def expected_payload(note: Notification) -> dict[str, Any]:
    """API.md's APNs payload, written out independently of the gateway."""
    alert = {"title": note.title, "body": note.body}
    aps = {
        "alert": alert,
        "sound": SOUNDS[note.sound],
        "interruption-level": LEVELS[note.priority][1],
    }
    payload = {"aps": aps, "notificationId": note.id, "iconStyle": note.icon_style.value}
    payload["metadata"] = dict(note.metadata)
    if note.sender_name is not None or note.sender_icon is not None:
        aps["mutable-content"] = 1
        payload["sender"] = {"name": note.sender_name, "icon": note.sender_icon}
    if note.stream is not None:
        payload["stream"] = {"name": note.stream.name, "code": note.stream.code}
    return payload


def test_the_exact_request_for_every_priority_sound_sender_stream_and_metadata(
    apns: FakeApns, clock: FakeClock
) -> None:
    icon = "https://icons.example/ci.png"
    senders = [(None, None), ("CI", None), (None, icon), ("CI", icon)]
    streams = [None, StreamRef("str_1", "Deploys", "falcon-7k2q")]
    combos = itertools.product(Priority, Sound, senders, streams, [{}, {"build": "42"}])
    notes = {}
    for i, (priority, sound, (sender, sender_icon), stream, metadata) in enumerate(combos):
        notes[str(i)] = notification(
            f"ntf_{i}", priority=priority, sound=sound, sender_name=sender, sender_icon=sender_icon,
            stream=stream, metadata=metadata, icon_style=IconStyle.BOLT,
        )  # fmt: skip
    dispatches = [ios(note, name) for name, note in notes.items()]
    assert send(gateway_for(apns, clock), dispatches) == [Delivered()] * 192
    assert apns.rejected == []
    assert len(apns.requests) == len(notes) == 192
    now = int(clock.now().timestamp())
    for name, note in notes.items():
        [request] = tries(apns, name)
        assert request.payload == expected_payload(note)
        assert request.jwt_header == {"typ": "JWT", "alg": "ES256", "kid": KEY_ID}
        assert request.claims == {"iss": TEAM_ID, "iat": now}
        headers = dict(request.headers)
        assert headers.pop("authorization") == apns.provider_tokens[0]
        apns_id = headers.pop("apns-id")
        parsed = uuid.UUID(apns_id)
        assert (str(parsed), parsed.version, parsed.variant) == (apns_id, 4, uuid.RFC_4122)
        assert headers == {
            ":method": "POST", ":scheme": "https", ":authority": apns.url.removeprefix("https://"),
            ":path": f"/3/device/{device_token(name)}", "apns-topic": TOPIC,
            "apns-push-type": "alert", "apns-priority": LEVELS[note.priority][0],
            "apns-expiration": str(now + 86400),
        }  # fmt: skip
    assert len({r.headers["apns-id"] for r in apns.requests}) == 192
    # expected_payload itself, against API.md's example of a stream send:
    assert tries(apns, "191")[0].payload == {
        "aps": {"alert": {"title": "Deploy finished", "body": "main is live"},
                "sound": CRITICAL_SOUND, "interruption-level": "critical", "mutable-content": 1},
        "notificationId": "ntf_191", "iconStyle": "bolt", "metadata": {"build": "42"},
        "sender": {"name": "CI", "icon": icon},
        "stream": {"name": "Deploys", "code": "falcon-7k2q"},
    }  # fmt: skip


@pytest.mark.parametrize(
    ("answer", "outcome"),
    [
        (Answer(410, "Unregistered"), TokenInvalid("Unregistered")),
        (Answer(410, "ExpiredToken"), TokenInvalid("ExpiredToken")),
        (Answer(400, "BadDeviceToken"), TokenInvalid("BadDeviceToken")),
        (Answer(400, "DeviceTokenNotForTopic"), TokenInvalid("DeviceTokenNotForTopic")),
        (Answer(429, "TooManyRequests", retry_after="30"), Retry("TooManyRequests", 30.0)),
        (Answer(429, "TooManyRequests"), Retry("TooManyRequests")),
        (Answer(500, "InternalServerError"), Retry("InternalServerError")),
        (Answer(503, "ServiceUnavailable", retry_after="5"), Retry("ServiceUnavailable", 5.0)),
        (Answer(400, "TopicDisallowed"), Failed("TopicDisallowed")),
        (Answer(403, "InvalidProviderToken"), Failed("InvalidProviderToken")),
        (Answer(413, "PayloadTooLarge"), Failed("PayloadTooLarge")),
        (Answer(404), Failed("Not Found")),
    ],
)
def test_each_apns_answer_maps_to_its_outcome(
    apns: FakeApns, clock: FakeClock, answer: Answer, outcome: Outcome
) -> None:
    apns.script(device_token("x"), answer)
    dispatches = [ios(notification(), "x"), ios(notification(), "ok")]
    assert send(gateway_for(apns, clock), dispatches) == [outcome, Delivered()]
    assert len(apns.requests) == 2


@pytest.mark.parametrize("status", [500, 503])
def test_a_500_or_503_replaces_the_connection(
    apns: FakeApns, clock: FakeClock, status: int
) -> None:
    apns.script(device_token("a0"), Answer(status, "Oops"))

    async def scenario(gw: ApnsGateway) -> list[Outcome]:
        return [*await gw.send(many(1, "a")), *await gw.send(many(1, "b"))]

    assert drive(gateway_for(apns, clock, connections=1), scenario) == [Retry("Oops"), Delivered()]
    assert [r.connection for r in apns.requests] == [1, 2]


def test_expired_provider_token_renews_the_token_once_and_retries_once(
    apns: FakeApns, clock: FakeClock
) -> None:
    expired = Answer(403, "ExpiredProviderToken")
    for name in ["young0", *(f"b{i}" for i in range(50)), "twice0", "twice0"]:
        apns.script(device_token(name), expired)
    gateway = gateway_for(apns, clock)

    async def scenario(gw: ApnsGateway) -> None:
        # A token younger than 20 minutes is not renewed (Apple would refuse the
        # update): APNs and we disagree on the time, so try again later.
        [young] = await gw.send(many(1, "young"))
        assert isinstance(young, Retry)
        assert young.reason.startswith("ExpiredProviderToken")
        assert gw.tokens.signed == 1
        clock.advance(25 * 60)
        assert await gw.send(many(50, "b")) == [Delivered()] * 50
        assert gw.tokens.signed == 2  # one renewal for the whole batch
        clock.advance(25 * 60)
        assert await gw.send(many(1, "twice")) == [Failed("ExpiredProviderToken")]
        assert gw.tokens.signed == 3

    drive(gateway, scenario)
    first, second, third = apns.provider_tokens
    for i in range(50):
        assert [r.headers["authorization"] for r in tries(apns, f"b{i}")] == [first, second]
    assert [r.headers["authorization"] for r in tries(apns, "twice0")] == [second, third]
    assert tries(apns, "twice0")[1].claims["iat"] == int(clock.now().timestamp())


def test_the_provider_token_is_reused_for_50_minutes(apns: FakeApns, clock: FakeClock) -> None:
    gateway = gateway_for(apns, clock)
    signed_at = int(clock.now().timestamp())

    async def scenario(gw: ApnsGateway) -> None:
        for batch in range(10):  # 1,000 pushes over 5 minutes
            assert await gw.send(many(100, f"b{batch}-")) == [Delivered()] * 100
            clock.advance(30)
        assert gw.tokens.signed == 1
        clock.advance(44 * 60 + 30)  # 49 min 30 s after signing: still the same token
        await gw.send(many(1, "late"))
        assert gw.tokens.signed == 1
        clock.advance(30)
        await gw.send(many(1, "renewed"))
        assert gw.tokens.signed == 2

    drive(gateway, scenario)
    assert len(apns.requests) == 1002
    first, second = apns.provider_tokens
    issued = {r.headers["authorization"]: r.claims["iat"] for r in apns.requests}
    assert issued == {first: signed_at, second: signed_at + 50 * 60}


@pytest.mark.parametrize("delay", [0.0, 0.02])
def test_goaway_mid_batch_retries_unprocessed_streams_on_a_new_connection(
    apns: FakeApns, clock: FakeClock, delay: float
) -> None:
    apns.goaway_after = 25
    apns.delay = delay  # with a delay, most answers come after the GOAWAY frame
    dispatches = many(200)
    assert send(gateway_for(apns, clock, connections=1), dispatches) == [Delivered()] * 200
    assert Counter(r.token for r in apns.requests) == Counter(d.device.token for d in dispatches)
    assert apns.connections >= 2
    assert apns.protocol_errors == []


def test_after_a_goaway_or_a_dropped_connection_it_reconnects(
    apns: FakeApns, clock: FakeClock
) -> None:
    async def scenario(gw: ApnsGateway) -> list[Outcome]:
        outcomes = list(await gw.send(many(20, "a")))
        apns.goaway()
        await asyncio.sleep(0.1)
        outcomes += await gw.send(many(20, "b"))
        apns.drop_connections()
        await asyncio.sleep(0.1)
        return outcomes + list(await gw.send(many(20, "c")))

    assert drive(gateway_for(apns, clock), scenario) == [Delivered()] * 60
    assert apns.connections >= 4


def test_the_servers_max_concurrent_streams_is_respected(apns: FakeApns, clock: FakeClock) -> None:
    apns.max_concurrent_streams = 5
    apns.delay = 0.01
    assert send(gateway_for(apns, clock, connections=1), many(60)) == [Delivered()] * 60
    assert apns.peak_streams == 5
    assert apns.protocol_errors == []


def test_a_lowered_then_raised_limit_is_followed(apns: FakeApns, clock: FakeClock) -> None:
    apns.delay = 0.01
    apns.set_max_concurrent_streams(3, after=1)

    async def scenario(gw: ApnsGateway) -> None:
        assert await gw.send(many(40, "a")) == [Delivered()] * 40  # sent before the change
        apns.peak_streams = 0
        assert await gw.send(many(40, "b")) == [Delivered()] * 40
        assert apns.peak_streams == 3
        apns.set_max_concurrent_streams(20)
        while apns.settings_acks < 3:  # the first SETTINGS, the lowered, the raised
            await asyncio.sleep(0.01)
        apns.peak_streams = 0
        assert await gw.send(many(40, "c")) == [Delivered()] * 40
        assert 3 < apns.peak_streams <= 20

    drive(gateway_for(apns, clock, connections=1), scenario)
    assert apns.protocol_errors == []


def test_bodies_larger_than_the_flow_control_window_are_sent_in_pieces(
    apns: FakeApns, clock: FakeClock
) -> None:
    apns.initial_window_size = 100
    note = notification(body="x" * 1500, metadata={f"k{i}": "v" * 50 for i in range(30)})
    assert send(gateway_for(apns, clock), many(30, note=note)) == [Delivered()] * 30
    assert all(r.payload == expected_payload(note) for r in apns.requests)


def test_a_long_body_is_shortened_with_an_ellipsis(apns: FakeApns, clock: FakeClock) -> None:
    body = 'é"\n' * 666  # two-byte characters and JSON escapes
    note = notification(title="Title", body=body, metadata={f"k{i}": "v" * 60 for i in range(30)})
    assert send(gateway_for(apns, clock), many(1, note=note)) == [Delivered()]
    [request] = apns.requests
    alert = request.payload["aps"]["alert"]
    assert alert["title"] == "Title"
    assert alert["body"].endswith("…")
    assert body.startswith(alert["body"][:-1].rstrip())
    assert request.payload["metadata"] == note.metadata
    assert 4096 - 8 < len(encode_payload(note)) <= 4096  # as long as fits


def test_the_title_is_shortened_too_when_the_body_is_not_enough() -> None:
    metadata = {f"k{i:02}": "v" * 70 for i in range(47)}
    encoded = encode_payload(notification(title="日" * 200, body="b" * 50, metadata=metadata))
    alert = json.loads(encoded)["aps"]["alert"]
    assert len(encoded) <= 4096
    assert alert["body"] == ""
    assert alert["title"].endswith("…")
    assert len(alert["title"]) > 20


def test_what_cannot_be_sent_fails_without_a_request(apns: FakeApns, clock: FakeClock) -> None:
    huge = notification("ntf_huge", metadata={f"key{i:02}": "\u0001" * 15 for i in range(50)})
    odd_token = ios(notification(), "odd", token="../../x")
    [too_big, bad_token] = send(gateway_for(apns, clock), [ios(huge, "a"), odd_token])
    assert isinstance(too_big, Failed)
    assert "payload too large" in too_big.reason
    assert bad_token == TokenInvalid("BadDeviceToken")
    assert apns.requests == []


def test_the_fake_checks_the_signature_so_a_wrong_key_fails(
    apns: FakeApns, clock: FakeClock
) -> None:
    gateway = gateway_for(apns, clock, key_pem=p8_key())
    assert send(gateway, many(2)) == [Failed("InvalidProviderToken")] * 2
    assert [r.reason for r in apns.rejected] == ["InvalidProviderToken"] * 2


def test_a_slow_answer_times_out_as_retry(apns: FakeApns, clock: FakeClock) -> None:
    apns.delay = 2.0

    async def scenario(gw: ApnsGateway) -> list[Outcome]:
        outcomes = list(await gw.send(many(3, "a")))
        apns.delay = 0.0
        return outcomes + list(await gw.send(many(1, "b")))

    outcomes = drive(gateway_for(apns, clock, timeout=0.5), scenario)
    assert outcomes == [Retry("APNs timed out")] * 3 + [Delivered()]


def test_a_cancelled_send_frees_its_streams(apns: FakeApns, clock: FakeClock) -> None:
    # Five streams at most: if the cancelled sends kept theirs, the next push
    # would wait for the slow answers and time out.
    apns.set_max_concurrent_streams(5)
    apns.delay = 5.0

    async def scenario(gw: ApnsGateway) -> list[Outcome]:
        sending = asyncio.ensure_future(gw.send(many(5, "slow")))
        await until(lambda: len(apns.requests) == 5)  # all five streams open, unanswered
        sending.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sending
        apns.delay = 0.0
        return list(await gw.send(many(1, "next")))

    gateway = gateway_for(apns, clock, timeout=2.0, connections=1)
    assert drive(gateway, scenario) == [Delivered()]


def test_a_dead_server_is_retry(clock: FakeClock) -> None:
    options: dict[str, Any] = {"key_id": KEY_ID, "team_id": TEAM_ID, "topic": TOPIC}
    url = f"https://127.0.0.1:{closed_port()}"
    outcomes = send(ApnsGateway(key_pem=KEY, base_url=url, clock=clock, **options), many(3))
    assert all(isinstance(o, Retry) and "connection failed" in o.reason for o in outcomes)
    with silent_listener() as port:  # accepts, never answers the TLS handshake
        url = f"https://127.0.0.1:{port}"
        gateway = ApnsGateway(
            key_pem=KEY, base_url=url, clock=clock, connect_timeout=0.3, **options
        )
        outcomes = send(gateway, many(3))
    assert all(isinstance(o, Retry) for o in outcomes)


def test_a_connection_lost_in_flight_is_retry(apns: FakeApns, clock: FakeClock) -> None:
    apns.delay = 5.0

    async def scenario(gw: ApnsGateway) -> list[Outcome]:
        sending = asyncio.ensure_future(gw.send(many(5)))
        await until(lambda: len(apns.requests) == 5)  # in flight: received, unanswered
        apns.drop_connections()
        return list(await sending)

    outcomes = drive(gateway_for(apns, clock), scenario)
    assert all(isinstance(o, Retry) and "connection" in o.reason for o in outcomes)


def test_from_settings(tmp_path: Path, apns: FakeApns, clock: FakeClock) -> None:
    key_file, ca_file = tmp_path / "AuthKey.p8", tmp_path / "ca.pem"
    key_file.write_bytes(KEY)
    apns.ca.cert_pem.write_to_path(str(ca_file))
    base: dict[str, Any] = {"apns_key_file": key_file, "apns_key_id": KEY_ID,
                            "apns_team_id": TEAM_ID, "apns_topic": TOPIC}  # fmt: skip

    def gateway(**values: Any) -> ApnsGateway:
        return ApnsGateway.from_settings(Settings(**{**base, **values}), clock)

    assert gateway().base_url == PRODUCTION_URL
    assert gateway(apns_environment="sandbox").base_url == SANDBOX_URL
    local = gateway(apns_url=apns.url, apns_environment="sandbox", ca_file=ca_file)
    assert local.base_url == apns.url
    assert send(local, many(1)) == [Delivered()]
    with pytest.raises(ValueError, match="set PUSHCORE_APNS_TEAM_ID, PUSHCORE_APNS_TOPIC"):
        gateway(apns_team_id=None, apns_topic=None)


def test_check_signs_a_token_or_says_why_the_key_is_unusable(clock: FakeClock) -> None:
    options: dict[str, Any] = {"key_id": KEY_ID, "team_id": TEAM_ID, "topic": TOPIC}
    options.update(base_url=PRODUCTION_URL, clock=clock)
    report = ApnsGateway(key_pem=KEY, **options).check()
    assert KEY_ID in report
    assert TEAM_ID in report
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    p384 = ec.generate_private_key(ec.SECP384R1())
    no_password = serialization.NoEncryption()
    keys = [b"not a key", rsa_key.private_bytes(*PKCS8, no_password)]
    for key in [*keys, p384.private_bytes(*PKCS8, no_password)]:
        gateway = ApnsGateway(key_pem=key, **options)
        with pytest.raises(ValueError, match="APNs key"):
            gateway.check()
        [outcome] = send(gateway, many(1))
        assert isinstance(outcome, Failed)
        assert outcome.reason.startswith("APNs key unusable")


def test_each_device_gets_its_own_receipt(apns: FakeApns, clock: FakeClock) -> None:
    note = notification()
    first, second = (
        attrs.evolve(ios(note, name), receipt=f"rct_{name * 40}") for name in ("a", "b")
    )

    assert send(gateway_for(apns, clock), [first, second]) == [Delivered(), Delivered()]

    assert [r.payload["receipt"] for r in tries(apns, "a") + tries(apns, "b")] == [
        first.receipt,
        second.receipt,
    ]
    assert tries(apns, "a")[0].payload["aps"] == tries(apns, "b")[0].payload["aps"]


def test_a_quiet_push_is_passive_priority_5_and_without_a_sound(
    apns: FakeApns, clock: FakeClock
) -> None:
    # Quiet hours in `silent` mode (API.md, "The recipient's time"); beside it the same
    # notification sent as usual, in the same batch.
    note = notification("ntf_q", priority=Priority.HIGH, sound=Sound.DEFAULT)
    quiet = attrs.evolve(ios(note, "quiet"), quiet=True)
    assert send(gateway_for(apns, clock), [quiet, ios(note, "loud")]) == [Delivered()] * 2
    [hushed], [usual] = tries(apns, "quiet"), tries(apns, "loud")
    assert hushed.headers["apns-priority"] == "5"
    assert hushed.payload["aps"] == {
        "alert": {"title": note.title, "body": note.body},
        "interruption-level": "passive",
    }
    assert usual.headers["apns-priority"] == "10"
    assert usual.payload == expected_payload(note)
