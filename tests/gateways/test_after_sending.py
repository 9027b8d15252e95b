"""Expiry and withdrawal as each gateway's fake server receives them (API.md, "After
sending"): what is left of `expiresAt` at the attempt (APNs `apns-expiration`, FCM
`android.ttl`, Web Push `TTL`, the webhook body's `expiresAt`), and the withdrawal
(APNs background push, FCM data `type: withdrawn`, the neutral withdrawal body)."""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import Iterator
from datetime import timedelta

import attrs
import pytest

from pushcore.domain.model import Notification, Platform
from pushcore.domain.outcomes import Delivered, Dispatch
from pushcore.domain.webhooks import new_secret, verify
from pushcore.domain.withdraw import WITHDRAWAL
from pushcore.gateways.fcm import FcmGateway
from pushcore.gateways.vapid import VapidKey
from tests.fakes.apns_server import FakeApns, running_apns
from tests.fakes.clock import FakeClock
from tests.fakes.fcm_server import FcmServer, running_fcm_server
from tests.fakes.receiver import Receiver, running_receiver
from tests.fakes.webpush_server import WebPushServer, running_webpush_server
from tests.gateways.support import Tls, dispatch, make_ca, notification
from tests.gateways.test_apns import KEY, KEY_ID, TEAM_ID, TOPIC, device_token, gateway_for, ios
from tests.gateways.test_apns import send as apns_send
from tests.gateways.test_fcm import KEY as FCM_KEY
from tests.gateways.test_webhook import send as webhook_send
from tests.gateways.test_webpush import make_gateway as webpush_gateway
from tests.gateways.test_webpush import send as webpush_send
from tests.gateways.test_webpush import web_dispatch


@pytest.fixture
def now() -> FakeClock:
    """The clock of the gateways and the fakes."""
    return FakeClock()


def expiring(clock: FakeClock, seconds: float) -> Notification:
    """A notification that expires ``seconds`` after the clock's time."""
    return attrs.evolve(notification("ntf_x"), expires_at=clock.now() + timedelta(seconds=seconds))


def withdrawal(item: Dispatch) -> Dispatch:
    """``item`` as the withdrawal of what it delivered."""
    return attrs.evolve(item, delivery=attrs.evolve(item.delivery, kind=WITHDRAWAL))


# -- APNs -----------------------------------------------------------------------


@pytest.fixture
def apns(now: FakeClock) -> Iterator[FakeApns]:
    """A running fake APNs trusting the test key."""
    options = {"key_id": KEY_ID, "team_id": TEAM_ID, "topic": TOPIC, "clock": now}
    with running_apns(key_pem=KEY, **options) as fake:
        yield fake


def test_apns_expiration_is_the_expiry_or_a_day(apns: FakeApns, now: FakeClock) -> None:
    epoch = int(now.now().timestamp())
    sent = [ios(expiring(now, 90.4), "soon"), ios(notification("ntf_y"), "never")]

    assert apns_send(gateway_for(apns, now), sent) == [Delivered(), Delivered()]

    by_token = {r.token: r.headers for r in apns.requests}
    assert by_token[device_token("soon")]["apns-expiration"] == str(epoch + 91)
    assert by_token[device_token("never")]["apns-expiration"] == str(epoch + 86400)
    assert by_token[device_token("never")]["apns-push-type"] == "alert"


def test_an_apns_withdrawal_is_a_background_push_at_priority_5(
    apns: FakeApns, now: FakeClock
) -> None:
    note = notification("ntf_w")  # of high priority: the withdrawal is 5 all the same
    assert apns_send(gateway_for(apns, now), [withdrawal(ios(note, "a"))]) == [Delivered()]

    [request] = apns.requests
    assert request.headers["apns-push-type"] == "background"
    assert request.headers["apns-priority"] == "5"
    assert request.payload == {
        "aps": {"content-available": 1},
        "withdrawn": {"notificationId": "ntf_w", "collapseKey": None},
    }


# -- FCM ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls() -> Tls:
    """A CA whose certificate for 127.0.0.1 the fake serves."""
    return make_ca()


@pytest.fixture
def fcm(tls: Tls, now: FakeClock) -> Iterator[FcmServer]:
    """A running fake FCM."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.ca.issue_cert("127.0.0.1").configure_cert(context)
    with running_fcm_server(context, now) as server:
        yield server


def fcm_send(fcm: FcmServer, tls: Tls, now: FakeClock, *dispatches: Dispatch) -> list[object]:
    """One send through a gateway on the fake."""
    account = fcm.service_account(key=FCM_KEY)
    gateway = FcmGateway(
        clock=now, tls=tls.client_context, service_account=account, base_url=fcm.base_url
    )

    async def go() -> list[object]:
        try:
            return list(await gateway.send(dispatches))
        finally:
            await gateway.aclose()

    return asyncio.run(go())


def android(item: Dispatch) -> Dispatch:
    """``item`` to an Android device."""
    return attrs.evolve(item, device=attrs.evolve(item.device, platform=Platform.ANDROID))


def test_fcm_ttl_is_what_is_left_at_the_attempt(fcm: FcmServer, tls: Tls, now: FakeClock) -> None:
    note = expiring(now, 120)
    now.advance(30.2)  # a retry, later: less is left

    sent = fcm_send(fcm, tls, now, android(dispatch("tok-a", note)), android(dispatch("tok-b")))

    assert sent == [Delivered(), Delivered()]
    by_token = {m["token"]: m["android"] for m in fcm.messages()}
    assert by_token["tok-a"] == {"priority": "HIGH", "ttl": "90s"}
    assert "ttl" not in by_token["tok-b"]  # no expiry: FCM's own default


def test_an_fcm_withdrawal_is_a_data_message(fcm: FcmServer, tls: Tls, now: FakeClock) -> None:
    sent = fcm_send(fcm, tls, now, withdrawal(android(dispatch("tok-a"))))

    assert sent == [Delivered()]
    [message] = fcm.messages()
    assert message["data"] == {"type": "withdrawn", "notificationId": "ntf_1"}
    assert "notification" not in message


# -- Web Push -------------------------------------------------------------------


@pytest.fixture
def webpush(now: FakeClock) -> Iterator[WebPushServer]:
    """A running fake push service."""
    with running_webpush_server(clock=now) as server:
        yield server


def test_web_push_ttl_and_payload_carry_the_expiry(webpush: WebPushServer, now: FakeClock) -> None:
    subscription = webpush.subscribe()
    note = expiring(now, 3600)
    now.advance(600)

    outcomes = webpush_send(
        webpush_gateway(VapidKey.generate(), now), [web_dispatch(subscription, note)]
    )

    assert outcomes == [Delivered()]
    [message] = webpush.messages
    assert message.headers["ttl"] == "3000"
    assert message.payload["expiresAt"] == "2026-11-21T11:00:00.000Z"


def test_a_web_push_withdrawal_is_the_withdrawal_body(
    webpush: WebPushServer, now: FakeClock
) -> None:
    subscription = webpush.subscribe()
    item = withdrawal(web_dispatch(subscription, notification("ntf_w")))

    assert webpush_send(webpush_gateway(VapidKey.generate(), now), [item]) == [Delivered()]

    [message] = webpush.messages
    assert message.payload == {"event": "withdrawn", "notificationId": "ntf_w", "collapseKey": None}
    assert message.headers["ttl"] == "86400"


# -- webhook devices ------------------------------------------------------------


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A webhook receiver on loopback."""
    with running_receiver() as running:
        yield running


def test_a_webhook_withdrawal_is_signed_as_a_payload_is(receiver: Receiver) -> None:
    clock = FakeClock()
    item = withdrawal(dispatch(receiver.url("/hook"), notification("ntf_w")))
    secret = new_secret(lambda _: 7)
    item = attrs.evolve(item, device=attrs.evolve(item.device, webhook_secret=secret))

    assert webhook_send([item], clock=clock) == [Delivered()]

    [request] = receiver.requests
    assert request.body == {"event": "withdrawn", "notificationId": "ntf_w", "collapseKey": None}
    assert json.loads(request.raw) == request.body
    assert verify(secret, request.headers, request.raw, int(clock.now().timestamp()))


def test_the_webhook_body_carries_expires_at(receiver: Receiver) -> None:
    clock = FakeClock()
    note = expiring(clock, 60)

    assert webhook_send([dispatch(receiver.url("/hook"), note)], clock=clock) == [Delivered()]

    [request] = receiver.requests
    assert request.body["expiresAt"] == "2026-11-21T10:01:00.000Z"
    assert request.body["notificationId"] == "ntf_x"
