"""Helpers for the gateway tests: dispatches, loopback HTTPS receivers, closed ports."""

from __future__ import annotations

import ipaddress
import socket
import ssl
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from http.server import ThreadingHTTPServer
from typing import Any

import attrs
import trustme

from pushcore.domain.addresses import IPAddress
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
from pushcore.domain.outcomes import Dispatch
from pushcore.domain.states import DeliveryStatus, NotificationStatus
from pushcore.outbound.guard import NetworkGuard
from tests.fakes.receiver import Receiver, _handler
from tests.fakes.serving import serving

CREATED = datetime(2026, 11, 21, 9, 0, 0, tzinfo=UTC)
SCHEDULED = datetime(2026, 11, 21, 10, 15, 30, 123456, tzinfo=UTC)


def notification(
    notification_id: str = "ntf_01",
    *,
    title: str = "Deploy finished",
    body: str = "main is live",
    metadata: Mapping[str, str] | None = None,
    sender_name: str | None = None,
    sender_icon: str | None = None,
    stream: StreamRef | None = None,
    scheduled_at: datetime = SCHEDULED,
    icon_style: IconStyle = IconStyle.TERMINAL,
    sound: Sound = Sound.SOFT,
    priority: Priority = Priority.HIGH,
) -> Notification:
    """A queued notification with every field the payload reads."""
    return Notification(
        id=notification_id,
        account_id="acc_1",
        title=title,
        body=body,
        icon_style=icon_style,
        sound=sound,
        priority=priority,
        delay="5s",
        custom_delay=None,
        target_device_token=None,
        metadata=dict(metadata or {}),
        scheduled_at=scheduled_at,
        sender_name=sender_name,
        sender_icon=sender_icon,
        status=NotificationStatus.QUEUED,
        created_at=CREATED,
        devices_targeted=1,
        stream=stream,
    )


def webhook_device(url: str, device_id: str = "dev_1") -> Device:
    """An active webhook device whose token is ``url``."""
    return Device(
        id=device_id,
        account_id="acc_1",
        platform=Platform.WEBHOOK,
        token=url,
        name="hook",
        created_at=CREATED,
    )


def dispatch(url: str, note: Notification | None = None, suffix: str = "1") -> Dispatch:
    """One in-flight delivery of ``note`` (a default one) to a webhook at ``url``."""
    note = note or notification(f"ntf_{suffix}")
    device = webhook_device(url, f"dev_{suffix}")
    delivery = Delivery(
        id=f"dlv_{suffix}",
        notification_id=note.id,
        account_id=note.account_id,
        device_id=device.id,
        status=DeliveryStatus.IN_FLIGHT,
        due_at=note.scheduled_at,
        attempts=1,
    )
    return Dispatch(delivery, device, note)


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@contextmanager
def silent_listener() -> Iterator[int]:
    """A loopback port that accepts connections (kernel backlog) but never answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        port: int = sock.getsockname()[1]
        yield port


def localhost_address() -> str:
    """The address the SSRF guard picks for ``localhost`` (what a pinned request hits)."""
    first: IPAddress = NetworkGuard(allow_private=True).resolve("http://localhost/")[0]
    return str(first)


@attrs.frozen
class Tls:
    """A test CA and the client context that trusts it."""

    ca: Any  # trustme.CA (untyped)
    client_context: ssl.SSLContext


def make_ca() -> Tls:
    """A fresh CA, and a client SSL context trusting only it."""
    ca = trustme.CA()
    context = ssl.create_default_context()
    ca.configure_trust(context)
    return Tls(ca, context)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # The default backlog of 5 resets connections when many clients connect at once.
    request_queue_size = 128


class _Server6(_Server):
    address_family = socket.AF_INET6


@attrs.define
class HttpsReceiver:
    """A :class:`Receiver` behind TLS, with the SNI names clients sent."""

    receiver: Receiver
    port: int
    server_names: list[str | None] = attrs.Factory(list)

    def url(self, host: str = "localhost", path: str = "/hook") -> str:
        """A URL on this receiver under ``host`` (which must resolve to it)."""
        return f"https://{host}:{self.port}{path}"


@contextmanager
def running_fast_receiver() -> Iterator[Receiver]:
    """``tests.fakes.receiver``'s receiver, served with a backlog for many clients at once
    (socketserver's default of 5 resets connections) and a quick shutdown."""
    receiver = Receiver()
    server = _Server((receiver.host, 0), _handler(receiver))
    receiver.port = server.server_address[1]
    with serving(server):
        yield receiver


@contextmanager
def running_https_receiver(tls: Tls, cert_name: str) -> Iterator[HttpsReceiver]:
    """An HTTPS webhook receiver with a certificate for ``cert_name`` from ``tls.ca``,
    listening where ``localhost`` resolves to."""
    address = localhost_address()
    receiver = Receiver(host=address)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.ca.issue_cert(cert_name).configure_cert(context)
    server_class = _Server6 if ipaddress.ip_address(address).version == 6 else _Server
    server = server_class((address, 0), _handler(receiver))
    https = HttpsReceiver(receiver, server.server_address[1])
    receiver.port = https.port

    def remember_sni(sock: ssl.SSLObject | ssl.SSLSocket, name: str | None, _: Any) -> None:
        https.server_names.append(name)

    context.sni_callback = remember_sni
    server.socket = context.wrap_socket(server.socket, server_side=True)
    with serving(server):
        yield https
