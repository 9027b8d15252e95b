"""What the account commands work on: the local services acting as an account, or a server.

Both sides have the shape of :class:`pushcore.Client` (``api.keys.create(...)``,
``api.notifications.get(...)``...) and return the same response views, so a
command prints a view without knowing where it came from. The local side
takes the same JSON bodies the HTTP API takes (built here from the keyword
arguments, as the client builds its request), so both validate alike.
"""

from __future__ import annotations

import builtins
import enum
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs

from pushcore.converter import (
    ApiKeyCreatedView,
    ApiKeyView,
    DeletedView,
    DeviceView,
    LookupView,
    NotificationCreatedView,
    NotificationPageView,
    NotificationView,
    SendResultView,
    StatsView,
    StreamDetailView,
    SubscriptionView,
    camel,
    decode_cursor,
    format_timestamp,
    parse_list_query,
    structure_request,
)
from pushcore.domain.inputs import (
    NewApiKey,
    NewDevice,
    NewNotification,
    NewStream,
    StreamSend,
    Subscribe,
)
from pushcore.services import Services


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return format_timestamp(value)
    if isinstance(value, enum.Enum):
        return value.value
    return value


def _body(**fields: Any) -> dict[str, Any]:
    """A JSON request body from keyword arguments: camelCase, None left out."""
    return {camel(k): _json_value(v) for k, v in fields.items() if v is not None}


@attrs.frozen
class Registered:
    """A device registration: the device, and whether it was new (False: refreshed)."""

    device: DeviceView
    created: bool


@attrs.frozen
class LocalKeys:
    """``client.keys`` on the local services."""

    services: Services
    account: str

    def create(
        self, name: str, scopes: Sequence[str], *, expires_at: datetime | str | None = None
    ) -> ApiKeyCreatedView:
        """Create a key; the view carries the full key, this once."""
        body = _body(name=name, scopes=list(scopes), expires_at=expires_at)
        created = self.services.keys.create(self.account, structure_request(NewApiKey, body))
        return ApiKeyCreatedView.of(created.key, created.secret)

    def list(self) -> list[ApiKeyView]:
        """Every key of the account, masked."""
        return [ApiKeyView.of(k) for k in self.services.keys.list(self.account)]

    def revoke(self, key_id: str) -> DeletedView:
        """Revoke a key (again is fine)."""
        return DeletedView.of(self.services.keys.revoke(self.account, key_id).id)


@attrs.frozen
class LocalDevices:
    """``client.devices`` on the local services."""

    services: Services
    account: str

    def register(
        self,
        platform: str,
        token: str,
        *,
        name: str | None = None,
        keys: Mapping[str, str] | None = None,
    ) -> Registered:
        """Register a device, or refresh the one with this token."""
        body = _body(platform=platform, token=token, name=name, keys=keys)
        result = self.services.devices.register(self.account, structure_request(NewDevice, body))
        return Registered(DeviceView.of(result.device), result.created)

    def list(self) -> list[DeviceView]:
        """Every device of the account, deactivated ones included."""
        return [DeviceView.of(d) for d in self.services.devices.list(self.account)]

    def token_of(self, device_id: str) -> str | None:
        """The token of the account's device ``device_id``; None when it has none such."""
        found = (d for d in self.services.devices.list(self.account) if d.id == device_id)
        return next((d.token for d in found), None)

    def remove(self, device_id: str) -> DeletedView:
        """Remove a device."""
        self.services.devices.remove(self.account, device_id)
        return DeletedView.of(device_id)


@attrs.frozen
class LocalNotifications:
    """``client.notifications`` on the local services."""

    services: Services
    account: str

    def create(self, title: str, **options: Any) -> NotificationCreatedView:
        """Schedule a notification (``options`` as the client's keyword arguments)."""
        body = _body(title=title, **options)
        request = structure_request(NewNotification, body)
        return NotificationCreatedView.of(self.services.notifications.create(self.account, request))

    def get(self, notification_id: str) -> NotificationView:
        """One notification with its delivery counts."""
        detail = self.services.notifications.get(self.account, notification_id)
        return NotificationView.of(detail.notification, detail.deliveries)

    def page(
        self, status: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> NotificationPageView:
        """One page of the list, newest first."""
        # The HTTP API's own query parsing, so the same values are refused alike.
        parsed_status, parsed_limit = parse_list_query(
            status, None if limit is None else str(limit)
        )
        before = decode_cursor(cursor) if cursor else None
        page = self.services.notifications.list(self.account, parsed_status, parsed_limit, before)
        return NotificationPageView.of(page.items, page.next_before)

    def cancel(self, notification_id: str) -> NotificationView:
        """Cancel; the notification as it is now."""
        self.services.notifications.cancel(self.account, notification_id)
        return self.get(notification_id)

    def stats(self) -> StatsView:
        """The account's counts."""
        return StatsView.of(self.services.notifications.stats(self.account))


@attrs.frozen
class LocalStreams:
    """``client.streams`` on the local services."""

    services: Services
    account: str

    def create(
        self, name: str, *, description: str | None = None, icon_url: str | None = None
    ) -> StreamDetailView:
        """Create a stream."""
        body = _body(name=name, description=description, icon_url=icon_url)
        view = self.services.streams.create(self.account, structure_request(NewStream, body))
        return StreamDetailView.of(view)

    def list(self) -> list[StreamDetailView]:
        """The account's streams."""
        return [StreamDetailView.of(v) for v in self.services.streams.list(self.account)]

    def delete(self, stream_id: str) -> DeletedView:
        """Delete a stream and its subscriptions."""
        self.services.streams.delete(self.account, stream_id)
        return DeletedView.of(stream_id)

    def send(self, stream_id: str, title: str, **options: Any) -> SendResultView:
        """Send to every subscriber now."""
        request = structure_request(StreamSend, _body(title=title, **options))
        return SendResultView.of(self.services.streams.send(self.account, stream_id, request))

    def subscribe(self, code: str) -> SubscriptionView:
        """Subscribe to another account's stream by its code."""
        request = structure_request(Subscribe, {"code": code})
        subscription, view = self.services.streams.subscribe(self.account, request.code)
        return SubscriptionView.of(subscription, view)

    def subscriptions(self) -> builtins.list[SubscriptionView]:
        """The account's subscriptions."""
        found = self.services.streams.subscriptions(self.account)
        return [SubscriptionView.of(s, v) for s, v in found]

    def unsubscribe(self, subscription_id: str) -> DeletedView:
        """Remove a subscription."""
        self.services.streams.unsubscribe(self.account, subscription_id)
        return DeletedView.of(subscription_id)

    def lookup(self, code: str) -> LookupView:
        """The stream with this code, and whether the account subscribes."""
        return LookupView.of(self.services.streams.lookup(self.account, code))


class LocalApi:
    """The local services acting as ``account``, in the client's shape."""

    def __init__(self, services: Services, account: str) -> None:
        self.account = account
        self.keys = LocalKeys(services, account)
        self.devices = LocalDevices(services, account)
        self.notifications = LocalNotifications(services, account)
        self.streams = LocalStreams(services, account)
