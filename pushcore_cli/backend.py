"""What the account commands work on: the local services acting as an account, or a server.

Both sides have the shape of :class:`pushcore.Client` (``api.keys.create(...)``,
``api.notifications.get(...)``...) and return the same response views, so a
command prints a view without knowing where it came from (:class:`Api`). The
local side takes the same JSON bodies the HTTP API takes (built here from the
keyword arguments, as the client builds its request), so both validate alike;
the remote side is the client itself, with the little the commands need that
the client's methods do not say (a page of a given size; whether a device was
new).
"""

from __future__ import annotations

import builtins
import enum
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol

import attrs

from pushcore.client import Client
from pushcore.client._call import Auth, Call, one
from pushcore.converter import (
    ApiKeyCreatedView,
    ApiKeyView,
    BatchCreatedView,
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
    structure_batch,
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
from pushcore_cli import output


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


class KeysApi(Protocol):
    """``client.keys``"""

    def create(
        self, name: str, scopes: Sequence[str], *, expires_at: Any = None
    ) -> ApiKeyCreatedView: ...
    def list(self) -> builtins.list[ApiKeyView]: ...
    def revoke(self, key_id: str) -> DeletedView: ...


class DevicesApi(Protocol):
    """``client.devices``, and what pushctl needs besides."""

    def register(
        self,
        platform: str,
        token: str,
        *,
        name: str | None = None,
        keys: Mapping[str, str] | None = None,
    ) -> Registered: ...
    def list(self) -> builtins.list[DeviceView]: ...
    def token_of(self, device_id: str) -> str | None: ...
    def remove(self, device_id: str) -> DeletedView: ...


class NotificationsApi(Protocol):
    """``client.notifications``, with one page of a given size."""

    def create(self, title: str, **options: Any) -> NotificationCreatedView: ...
    def create_many(
        self, items: Sequence[Mapping[str, Any]]
    ) -> builtins.list[NotificationCreatedView]: ...
    def get(self, notification_id: str) -> NotificationView: ...
    def page(
        self, status: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> NotificationPageView: ...
    def cancel(self, notification_id: str) -> NotificationView: ...
    def stats(self) -> StatsView: ...


class StreamsApi(Protocol):
    """``client.streams``"""

    def create(
        self, name: str, *, description: str | None = None, icon_url: str | None = None
    ) -> StreamDetailView: ...
    def list(self) -> builtins.list[StreamDetailView]: ...
    def delete(self, stream_id: str) -> DeletedView: ...
    def send(
        self,
        stream_id: str,
        title: str,
        *,
        body: str | None = None,
        sound: str | None = None,
        priority: str | None = None,
        sender_name: str | None = None,
        sender_icon: str | None = None,
    ) -> SendResultView: ...
    def subscribe(self, code: str) -> SubscriptionView: ...
    def subscriptions(self) -> builtins.list[SubscriptionView]: ...
    def unsubscribe(self, subscription_id: str) -> DeletedView: ...
    def lookup(self, code: str) -> LookupView: ...


class Api(Protocol):
    """What an account command works on, local or remote."""

    @property
    def who(self) -> str:
        """``alice``, or who the credentials are (remote)."""
        ...

    @property
    def as_account(self) -> str:
        """`` --account alice`` to repeat in hints, or ``""`` (remote: the credentials say)."""
        ...

    @property
    def keys(self) -> KeysApi: ...
    @property
    def devices(self) -> DevicesApi: ...
    @property
    def notifications(self) -> NotificationsApi: ...
    @property
    def streams(self) -> StreamsApi: ...


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

    def register(self, platform: str, token: str, **options: Any) -> Registered:
        """Register a device, or refresh the one with this token (``name``, ``keys``)."""
        body = _body(platform=platform, token=token, **options)
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

    def create_many(
        self, items: Sequence[Mapping[str, Any]]
    ) -> builtins.list[NotificationCreatedView]:
        """Schedule a batch, all or nothing (``items`` as the API's JSON objects)."""
        requests = structure_batch({"notifications": list(items)})
        created = self.services.notifications.create_many(self.account, requests)
        return [NotificationCreatedView.of(n) for n in created]

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
        """Send to every subscriber now (``options`` as :meth:`StreamsApi.send` names them)."""
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
        self.services = services
        self.who = account
        self.as_account = f" --account {account}"
        self.keys = LocalKeys(services, account)
        self.devices = LocalDevices(services, account)
        self.notifications = LocalNotifications(services, account)
        self.streams = LocalStreams(services, account)


@attrs.frozen
class RemoteDevices:
    """``client.devices``; whether a registration was new is read off the list before it."""

    client: Client

    def register(self, platform: str, token: str, **options: Any) -> Registered:
        """Register a device, or refresh the one with this token (``name``, ``keys``)."""
        # The API says 201 or 200; the client's result does not, the ids do.
        known = {d.id for d in self.client.devices.list()}
        device = self.client.devices.register(platform, token, **options)
        return Registered(device, device.id not in known)

    def list(self) -> builtins.list[DeviceView]:
        """Every device of the account."""
        return self.client.devices.list()

    def token_of(self, device_id: str) -> str | None:
        """None: the API never shows a device's token (only its prefix)."""
        return None

    def remove(self, device_id: str) -> DeletedView:
        """Remove a device."""
        return self.client.devices.remove(device_id)


@attrs.frozen
class RemoteNotifications:
    """``client.notifications``, and one page of the list as ``--limit`` and ``--cursor`` ask."""

    client: Client

    def create(self, title: str, **options: Any) -> NotificationCreatedView:
        """Schedule a notification."""
        return self.client.notifications.create(title, **options)

    def create_many(
        self, items: Sequence[Mapping[str, Any]]
    ) -> builtins.list[NotificationCreatedView]:
        """Schedule a batch, all or nothing (``items`` as the API's JSON objects)."""
        # The objects go as they are, so the server names their fields, not the client.
        body = {"notifications": list(items)}
        call = Call("POST", "/api/notifications/batch", Auth.KEY, one(BatchCreatedView), body)
        return list(self.client.notifications._sender.send(call).items)

    def get(self, notification_id: str) -> NotificationView:
        """One notification with its delivery counts."""
        return self.client.notifications.get(notification_id)

    def page(
        self, status: str | None = None, limit: int | None = None, cursor: str | None = None
    ) -> NotificationPageView:
        """One page of the list, newest first."""
        return self.client.notifications.page(status, limit, cursor)

    def cancel(self, notification_id: str) -> NotificationView:
        """Cancel; the notification as it is now."""
        return self.client.notifications.cancel(notification_id)

    def stats(self) -> StatsView:
        """The account's counts."""
        return self.client.notifications.stats()


class RemoteApi:
    """A server's HTTP API through :class:`pushcore.Client`, as the credentials' account."""

    who = "the account of the credentials"
    as_account = ""

    def __init__(self, client: Client) -> None:
        self.keys: KeysApi = client.keys
        self.devices = RemoteDevices(client)
        self.notifications = RemoteNotifications(client)
        self.streams: StreamsApi = client.streams


# An engine beats every 2 s; 10 s without one is API.md's "not seen working".
ENGINE_SILENCE = timedelta(seconds=10)


def warn_without_engine(api: Api) -> None:
    """Warn (local mode) when no delivery engine works the database: sends would wait."""
    if isinstance(api, LocalApi) and not api.services.engine_seen_since(ENGINE_SILENCE):
        output.warn(
            "no delivery engine (pushctl serve or pushctl worker) has been seen working on"
            " this database in the last 10 seconds: nothing is delivered until one runs."
        )
