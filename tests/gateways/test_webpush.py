"""The Web Push gateway against a loopback push service that decrypts like a browser.

Nothing of ours is mocked: the gateway encrypts (RFC 8291), signs (RFC 8292)
and posts with its real client session through the SSRF guard and address
pinning; ``tests.fakes.webpush_server`` verifies the token and decrypts with
the subscription's private key.
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import stat
import threading
from collections.abc import Iterator, Sequence
from datetime import timedelta
from email.utils import format_datetime
from pathlib import Path

import attrs
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from pushcore.config import Settings
from pushcore.converter import delivery_payload
from pushcore.domain.model import (
    Device,
    Notification,
    Platform,
    Priority,
    StreamRef,
    WebPushKeys,
)
from pushcore.domain.outcomes import Delivered, Dispatch, Failed, Outcome, Retry, TokenInvalid
from pushcore.gateways import vapid as vapid_module
from pushcore.gateways._http import status_reason
from pushcore.gateways.vapid import (
    VapidKey,
    b64url,
    b64url_decode,
    load_or_create_vapid_key,
    origin_of,
    vapid_authorization,
)
from pushcore.gateways.webpush import (
    MAX_PLAINTEXT,
    TOO_LARGE,
    WebPushGateway,
    encrypt,
    fitted_plaintext,
)
from pushcore.outbound.guard import NetworkGuard
from tests.fakes.clock import FakeClock
from tests.fakes.webpush_server import FakeSubscription, WebPushServer, running_webpush_server
from tests.gateways.support import (
    closed_port,
    dispatch,
    localhost_address,
    make_ca,
    notification,
    silent_listener,
)

SUBJECT = "mailto:ops@example.com"
# A browser's p256dh: any valid P-256 point will do where nothing is decrypted.
SOME_P256DH = VapidKey.generate().public_key_b64url
REFUSED = "Web Push endpoint refused: must not point at a private, loopback or link-local address"


@pytest.fixture
def clock() -> FakeClock:
    """The time both the gateway and the push service go by."""
    return FakeClock()


@pytest.fixture
def server(clock: FakeClock) -> Iterator[WebPushServer]:
    """A plain-HTTP push service on 127.0.0.1."""
    with running_webpush_server(clock) as running:
        yield running


@pytest.fixture
def vapid() -> VapidKey:
    """A fresh VAPID key pair (and so an empty token cache)."""
    return VapidKey.generate()


def make_gateway(
    vapid: VapidKey,
    clock: FakeClock,
    *,
    guard: NetworkGuard | None = None,
    tls: ssl.SSLContext | None = None,
    timeout: float = 5.0,
) -> WebPushGateway:
    """A gateway as from_settings builds one, with loopback allowed by default."""
    return WebPushGateway(
        vapid=vapid,
        subject=SUBJECT,
        guard=guard or NetworkGuard(allow_private=True),
        clock=clock,
        tls=tls,
        timeout=timeout,
        connect_timeout=min(timeout, 5.0),
    )


def send(gateway: WebPushGateway, dispatches: Sequence[Dispatch]) -> list[Outcome]:
    """One ``send`` in a fresh event loop, closing the session afterwards."""

    async def go() -> list[Outcome]:
        try:
            return list(await gateway.send(dispatches))
        finally:
            await gateway.aclose()

    return asyncio.run(go())


def web_dispatch(
    subscription: FakeSubscription,
    note: Notification | None = None,
    suffix: str = "1",
    token: str = "",
) -> Dispatch:
    """A delivery to a web device subscribed as ``subscription`` (at ``token`` if given)."""
    base = dispatch(subscription.endpoint, note, suffix)
    device = attrs.evolve(
        base.device,
        platform=Platform.WEB,
        token=token or subscription.endpoint,
        keys=WebPushKeys(p256dh=subscription.p256dh, auth=subscription.auth),
    )
    return attrs.evolve(base, device=device)


def with_keys(item: Dispatch, keys: WebPushKeys | None) -> Dispatch:
    """``item`` with other subscription keys on its device."""
    device: Device = attrs.evolve(item.device, keys=keys)
    return attrs.evolve(item, device=device)


# -- the message ------------------------------------------------------------------


def test_the_decrypted_message_is_the_delivery_payload(
    server: WebPushServer, vapid: VapidKey, clock: FakeClock
) -> None:
    note = notification(
        "ntf_web",
        title="Déploiement ✓",
        metadata={"env": "prod", "region": "eu-west"},
        sender_name="CI",
        sender_icon="https://cdn.example/ci.png",
        stream=StreamRef(id="str_1", name="Deploys", code="falcon-7k2q"),
    )
    subscription = server.subscribe()

    assert send(make_gateway(vapid, clock), [web_dispatch(subscription, note)]) == [Delivered()]

    assert server.errors == []
    [message] = server.to(subscription)
    expected = delivery_payload(note)
    for field, value in expected.items():
        assert message.payload[field] == value, field
    assert message.payload == expected
    assert message.payload["title"] == "Déploiement ✓"
    assert message.payload["scheduledAt"] == "2026-11-21T10:15:30.123Z"


def test_encryption_reproduces_the_rfc_8291_example() -> None:
    # RFC 8291 Appendix A, with its ephemeral key and salt: byte for byte.
    as_private = int.from_bytes(b64url_decode("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"))
    keys = WebPushKeys(
        p256dh="BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
        auth="BTBZMqHH6r4Tts7J_aSIgg",
    )

    body = encrypt(
        b"When I grow up, I want to be a watermelon",
        keys,
        ephemeral=ec.derive_private_key(as_private, ec.SECP256R1()),
        salt=b64url_decode("DGv6ra1nlYgDCS1FRnbzlw"),
    )

    assert b64url(body) == (
        "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocIn"
        "mYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNW"
        "QexSgSxsj_Qulcy4a-fN"
    )


def test_headers_of_a_push_message(
    server: WebPushServer, vapid: VapidKey, clock: FakeClock
) -> None:
    subscription = server.subscribe()

    send(make_gateway(vapid, clock), [web_dispatch(subscription)])

    [message] = server.messages
    assert message.headers["ttl"] == "86400"
    assert message.headers["content-encoding"] == "aes128gcm"
    assert message.headers["content-type"] == "application/octet-stream"
    assert message.headers["host"] == f"127.0.0.1:{server.port}"
    assert message.record_size == 4096
    assert message.body_size <= 4096


@pytest.mark.parametrize(
    ("priority", "urgency"),
    [
        (Priority.LOW, "low"),
        (Priority.NORMAL, "normal"),
        (Priority.HIGH, "high"),
        (Priority.CRITICAL, "high"),
    ],
)
def test_urgency_follows_the_priority(
    server: WebPushServer, vapid: VapidKey, clock: FakeClock, priority: Priority, urgency: str
) -> None:
    subscription = server.subscribe()

    send(make_gateway(vapid, clock), [web_dispatch(subscription, notification(priority=priority))])

    assert server.messages[0].headers["urgency"] == urgency


def test_a_fan_out_encrypts_to_each_subscription_with_fresh_keys_and_one_token(
    server: WebPushServer, vapid: VapidKey, clock: FakeClock
) -> None:
    note = notification("ntf_fan")
    subscriptions = [server.subscribe() for _ in range(40)]
    batch = [web_dispatch(s, note, str(i)) for i, s in enumerate(subscriptions)]

    assert send(make_gateway(vapid, clock), batch) == [Delivered()] * 40

    assert server.errors == []
    assert {m.subscription_id for m in server.messages} == {s.id for s in subscriptions}
    assert all(m.payload == delivery_payload(note) for m in server.messages)
    sender_keys = {m.sender_key for m in server.messages}
    assert len(sender_keys) == 40
    assert vapid.public_key_bytes not in sender_keys
    assert len({m.token for m in server.messages}) == 1


def test_a_long_body_is_shortened_to_fit_one_record(
    server: WebPushServer, vapid: VapidKey, clock: FakeClock
) -> None:
    note = notification(body="€" * 2000)  # 6000 bytes of UTF-8
    subscription = server.subscribe()

    assert send(make_gateway(vapid, clock), [web_dispatch(subscription, note)]) == [Delivered()]

    [message] = server.messages
    assert server.errors == []
    assert len(message.plaintext) <= MAX_PLAINTEXT == 3993
    assert len(message.plaintext) > MAX_PLAINTEXT - len("€".encode())
    assert message.payload["body"].endswith("…")
    assert message.payload["body"][:-1] == "€" * (len(message.payload["body"]) - 1)
    assert {**message.payload, "body": note.body} == delivery_payload(note)


def test_shortening_accounts_for_json_escapes() -> None:
    payload = delivery_payload(notification(body='"\\\n' * 700))

    fitted = fitted_plaintext(payload)

    assert fitted is not None
    assert len(fitted) <= MAX_PLAINTEXT
    assert json.loads(fitted)["body"].endswith("…")
    assert fitted_plaintext(delivery_payload(notification())) == json.dumps(
        delivery_payload(notification()), separators=(",", ":"), ensure_ascii=False
    ).encode("utf-8")


def test_a_payload_too_large_without_its_body_fails_unsent(
    server: WebPushServer, vapid: VapidKey, clock: FakeClock
) -> None:
    metadata = {f"key{i:02}": "v" * 80 for i in range(50)}
    subscription = server.subscribe()

    outcomes = send(
        make_gateway(vapid, clock), [web_dispatch(subscription, notification(metadata=metadata))]
    )

    assert outcomes == [Failed(TOO_LARGE)]
    assert server.requests == 0


# -- VAPID ------------------------------------------------------------------------


def test_the_vapid_token_names_the_endpoint_origin_subject_and_expiry(
    server: WebPushServer, vapid: VapidKey, clock: FakeClock
) -> None:
    send(make_gateway(vapid, clock), [web_dispatch(server.subscribe())])

    [message] = server.messages
    assert message.jwt_header == {"typ": "JWT", "alg": "ES256"}
    assert message.claims == {
        "aud": f"http://127.0.0.1:{server.port}",
        "exp": int((clock.now() + timedelta(hours=12)).timestamp()),
        "sub": SUBJECT,
    }
    assert message.vapid_key == vapid.public_key_b64url


def test_the_token_is_reused_per_origin_until_an_hour_before_expiry(
    vapid: VapidKey, clock: FakeClock
) -> None:
    def token(url: str) -> str:
        return vapid_authorization(vapid, url, SUBJECT, clock.now())

    first = token("https://push.example.net/wpush/a")
    assert first.startswith("vapid t=")
    assert first.endswith(f", k={vapid.public_key_b64url}")
    assert token("https://push.example.net/wpush/b") == first
    other = token("https://fcm.googleapis.com/fcm/send/x")
    assert other != first

    clock.advance(timedelta(hours=10, minutes=59))
    assert token("https://push.example.net/wpush/c") == first
    clock.advance(timedelta(minutes=1))
    renewed = token("https://push.example.net/wpush/c")
    assert renewed != first
    assert token("https://push.example.net/wpush/d") == renewed


def test_the_gateway_reuses_its_token_across_batches(
    server: WebPushServer, vapid: VapidKey, clock: FakeClock
) -> None:
    gateway = make_gateway(vapid, clock)
    subscription = server.subscribe()
    send(gateway, [web_dispatch(subscription)])
    clock.advance(timedelta(hours=5))
    send(gateway, [web_dispatch(subscription)])
    clock.advance(timedelta(hours=6, seconds=1))
    send(gateway, [web_dispatch(subscription)])

    first, second, third = server.messages
    assert second.token == first.token
    assert third.token != first.token
    assert third.claims["exp"] == int((clock.now() + timedelta(hours=12)).timestamp())
    assert server.errors == []


@pytest.mark.parametrize(
    ("url", "origin"),
    [
        ("https://push.example.net/wpush/v2/abc", "https://push.example.net"),
        ("HTTPS://Push.Example.NET:443/x", "https://push.example.net"),
        ("http://push.example.net:80/x", "http://push.example.net"),
        ("https://push.example.net:8443/x?q=1", "https://push.example.net:8443"),
        ("https://[::1]:8443/x", "https://[::1]:8443"),
    ],
)
def test_the_audience_is_the_origin(url: str, origin: str) -> None:
    assert origin_of(url) == origin


def test_a_token_lives_at_most_a_day(vapid: VapidKey, clock: FakeClock) -> None:
    with pytest.raises(ValueError, match="24 hours"):
        vapid_authorization(vapid, "https://p.example/x", SUBJECT, clock.now(), timedelta(hours=25))


# -- answers and failures ---------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "retry_after", "expected"),
    [
        (200, None, Delivered()),
        (202, None, Delivered()),
        (404, None, TokenInvalid("Not Found")),
        (410, None, TokenInvalid("Gone")),
        (429, "30", Retry("Too Many Requests", 30.0)),
        (429, "in 120s", Retry("Too Many Requests", 120.0)),
        (500, None, Retry("Internal Server Error")),
        (503, "7", Retry("Service Unavailable", 7.0)),
        (413, None, Failed(status_reason(413))),
        (400, None, Failed("Bad Request")),
        (403, None, Failed("Forbidden")),
        (301, None, Failed("Moved Permanently")),
    ],
)
def test_answers_become_outcomes(
    server: WebPushServer,
    vapid: VapidKey,
    clock: FakeClock,
    status: int,
    retry_after: str | None,
    expected: Outcome,
) -> None:
    subscription = server.subscribe()
    if retry_after == "in 120s":  # an HTTP date, two minutes ahead of the clock
        retry_after = format_datetime(clock.now() + timedelta(seconds=120), usegmt=True)
    server.fail(subscription, status, retry_after=retry_after)

    assert send(make_gateway(vapid, clock), [web_dispatch(subscription)]) == [expected]
    assert server.errors == []  # the message itself was valid


def test_an_unsubscribed_or_unknown_endpoint_is_a_dead_token(
    server: WebPushServer, vapid: VapidKey, clock: FakeClock
) -> None:
    gone, unknown = server.subscribe(), server.subscribe()
    server.unsubscribe(gone)
    batch = [
        web_dispatch(gone, suffix="1"),
        web_dispatch(unknown, suffix="2", token=f"{server.origin}/push/nobody"),
    ]

    assert send(make_gateway(vapid, clock), batch) == [
        TokenInvalid("Gone"),
        TokenInvalid("Not Found"),
    ]


def test_network_errors_are_retried(
    server: WebPushServer, vapid: VapidKey, clock: FakeClock
) -> None:
    subscription = server.subscribe()
    closed = web_dispatch(subscription, token=f"http://127.0.0.1:{closed_port()}/push/x")
    with silent_listener() as port:
        silent = web_dispatch(subscription, suffix="2", token=f"http://127.0.0.1:{port}/push/x")
        outcomes = send(make_gateway(vapid, clock, timeout=0.5), [closed, silent])

    assert outcomes == [
        Retry("Web Push endpoint unreachable"),
        Retry("Web Push endpoint timed out"),
    ]


def test_private_endpoints_are_refused_unless_allowed(
    server: WebPushServer, vapid: VapidKey, clock: FakeClock
) -> None:
    subscription = server.subscribe()
    batch = [
        web_dispatch(subscription),
        web_dispatch(subscription, suffix="2", token=f"http://localhost:{server.port}/push/sub1"),
        web_dispatch(subscription, suffix="3", token="ftp://push.example.net/x"),
    ]

    outcomes = send(make_gateway(vapid, clock, guard=NetworkGuard(allow_private=False)), batch)

    assert outcomes == [
        Failed(REFUSED),
        Failed(REFUSED),
        Failed("Web Push endpoint refused: must be an http or https URL"),
    ]
    assert server.requests == 0


@pytest.mark.parametrize(
    ("keys", "reason"),
    [
        (None, "Web Push subscription has no keys (p256dh, auth)"),
        (WebPushKeys("BA" + "A" * 85, "A" * 22), "Web Push subscription keys are invalid"),
        (WebPushKeys("!!not base64!!", "A" * 22), "Web Push subscription keys are invalid"),
        (WebPushKeys(SOME_P256DH, "AAAAAAAAAAA"), "Web Push subscription keys are invalid"),
    ],
    ids=["missing", "not-a-point", "not-base64", "short-auth"],
)
def test_unusable_subscription_keys_fail_unsent(
    server: WebPushServer,
    vapid: VapidKey,
    clock: FakeClock,
    keys: WebPushKeys | None,
    reason: str,
) -> None:
    item = with_keys(web_dispatch(server.subscribe()), keys)

    assert send(make_gateway(vapid, clock), [item]) == [Failed(reason)]
    assert server.requests == 0


def test_https_endpoints_are_pinned_with_the_name_kept_for_tls_and_audience(
    vapid: VapidKey, clock: FakeClock
) -> None:
    tls = make_ca()
    with running_webpush_server(
        clock, host=localhost_address(), name="localhost", ca=tls.ca
    ) as server:
        subscription = server.subscribe()
        outcomes = send(
            make_gateway(vapid, clock, tls=tls.client_context), [web_dispatch(subscription)]
        )

    assert outcomes == [Delivered()]
    assert server.errors == []
    assert server.messages[0].claims["aud"] == f"https://localhost:{server.port}"


# -- configuration and the key file ----------------------------------------------


def test_from_settings_uses_the_data_directory_key(tmp_path: Path, clock: FakeClock) -> None:
    settings = Settings(data_dir=tmp_path / "data", vapid_subject="https://example.com/contact")

    gateway = WebPushGateway.from_settings(settings, clock)

    key = load_or_create_vapid_key(tmp_path / "data")
    assert gateway.check() == (
        "Web Push ready: VAPID subject https://example.com/contact, "
        f"public key {key.public_key_b64url}"
    )


@pytest.mark.parametrize("subject", [None, "", "ops@example.com", "http://example.com", "mailto:"])
def test_the_subject_must_be_a_mailto_or_https_contact(
    tmp_path: Path, clock: FakeClock, subject: str | None
) -> None:
    with pytest.raises(ValueError, match="PUSHCORE_VAPID_SUBJECT"):
        WebPushGateway.from_settings(Settings(data_dir=tmp_path, vapid_subject=subject), clock)


def test_the_key_file_is_created_once_with_mode_0600(tmp_path: Path) -> None:
    data_dir = tmp_path / "nested" / "data"

    first = load_or_create_vapid_key(data_dir)
    path = data_dir / "vapid-private.pem"
    content = path.read_bytes()
    second = load_or_create_vapid_key(data_dir)

    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert content.startswith(b"-----BEGIN PRIVATE KEY-----")
    assert path.read_bytes() == content
    assert second.public_key_b64url == first.public_key_b64url


def test_concurrent_first_runs_agree_on_one_key(tmp_path: Path) -> None:
    start = threading.Barrier(16)
    keys: list[str] = []

    def load() -> None:
        start.wait()
        keys.append(load_or_create_vapid_key(tmp_path).public_key_b64url)

    threads = [threading.Thread(target=load) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(keys) == 16
    assert set(keys) == {load_or_create_vapid_key(tmp_path).public_key_b64url}


def test_a_loser_of_the_race_waits_for_the_key_being_written(tmp_path: Path) -> None:
    path = tmp_path / "vapid-private.pem"
    path.touch(mode=0o600)  # the winner has created the file, not yet written it
    key = VapidKey.generate()
    writer = threading.Timer(0.1, path.write_bytes, [key.to_pem()])
    writer.start()

    assert load_or_create_vapid_key(tmp_path).public_key_b64url == key.public_key_b64url
    writer.join()


def test_a_broken_key_file_is_an_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vapid_module, "_WRITE_WAIT_SECONDS", 0.05)
    path = tmp_path / "vapid-private.pem"
    path.write_bytes(
        ec.generate_private_key(ec.SECP384R1()).private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )

    with pytest.raises(ValueError, match=r"vapid-private\.pem is not a P-256 private key"):
        load_or_create_vapid_key(tmp_path)


def test_the_public_key_is_an_unpadded_base64url_uncompressed_point(vapid: VapidKey) -> None:
    text = vapid.public_key_b64url
    point = b64url_decode(text)

    assert len(point) == 65
    assert point[0] == 0x04
    assert len(text) == 87
    assert "=" not in text
    assert set(text) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert VapidKey.from_pem(vapid.to_pem()).public_key_b64url == text
    private = serialization.load_pem_private_key(vapid.to_pem(), password=None)
    assert isinstance(private, ec.EllipticCurvePrivateKey)
    public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), point)
    assert public.public_numbers() == private.public_key().public_numbers()


def test_a_quiet_push_has_urgency_low_whatever_its_priority(
    server: WebPushServer, vapid: VapidKey, clock: FakeClock
) -> None:
    # Quiet hours in `silent` mode (API.md, "The recipient's time").
    subscription = server.subscribe()
    loud = web_dispatch(subscription, notification(priority=Priority.CRITICAL))

    send(make_gateway(vapid, clock), [attrs.evolve(loud, quiet=True)])

    assert server.messages[0].headers["urgency"] == "low"
