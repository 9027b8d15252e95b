"""The response views: their JSON is the API's, and it reads back into the same view.

The expected JSON below is written out field by field as the API pins it
(and as the routes built it by hand before the views), so a view that
renames, drops or reformats a field fails here, not only in an HTTP test.
"""

from __future__ import annotations

import enum
import functools
import json
import types
import typing
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pushcore.converter as converter_module
from pushcore.converter import (
    NOTIFICATION_CURSOR,
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
    StreamSummaryView,
    SubscriptionView,
    View,
    format_timestamp,
    from_json,
    to_json,
)
from pushcore.domain.model import (
    ApiKey,
    DeliveryCounts,
    Device,
    Notification,
    NotificationStats,
    StreamView,
    Subscription,
)
from pushcore.domain.paging import Page
from pushcore.domain.states import NotificationStatus
from pushcore.services.streams import Lookup, SendResult

# Aware UTC instants; the API keeps milliseconds, so round trips use those.
INSTANTS = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
)
MS_INSTANTS = INSTANTS.map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))


def strategy(tp: Any, instants: st.SearchStrategy[datetime]) -> st.SearchStrategy[Any]:
    """Values of the annotated type ``tp``, attrs classes built field by field."""
    # Cached: built anew for each example, the strategies for a page's nested types
    # were most of these tests' CPU (Hypothesis keeps what it learns of one it has seen).
    return _strategy(tp, instants)


@functools.cache
def _strategy(tp: Any, instants: st.SearchStrategy[datetime]) -> st.SearchStrategy[Any]:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*(strategy(a, instants) for a in args))
    if tp is type(None):
        return st.none()
    if origin is tuple:
        return st.lists(strategy(args[0], instants), max_size=3).map(tuple)
    if origin in (dict, Mapping):
        return st.dictionaries(st.text(max_size=8), strategy(args[1], instants), max_size=3)
    if tp is datetime:
        return instants
    if tp is str:
        # Short: a page nests notifications in deliveries in lists, and unbounded
        # text made its examples overrun Hypothesis's buffer and trip its
        # too_slow/data_too_large health checks on a busy machine (the flaky test).
        return st.text(max_size=12)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return st.sampled_from(tp)
    if attrs.has(tp):
        fields = attrs.fields(attrs.resolve_types(tp))
        return st.builds(tp, **{f.name: strategy(f.type, instants) for f in fields})
    return st.from_type(tp)


def ts(value: datetime | None) -> str | None:
    return None if value is None else format_timestamp(value)


def device(d: Device) -> dict[str, Any]:
    return {
        "id": d.id,
        "name": d.name,
        "platform": d.platform.value,
        "tokenPrefix": d.token[:8],
        "isActive": d.is_active,
        "createdAt": ts(d.created_at),
        "lastDeliveredAt": ts(d.last_delivered_at),
    }


def key_created(k: ApiKey, secret: str) -> dict[str, Any]:
    return {
        "id": k.id,
        "name": k.name,
        "key": secret,
        "keyPrefix": k.key_prefix,
        "scopes": [s.value for s in k.scopes],
        "expiresAt": ts(k.expires_at),
        "createdAt": ts(k.created_at),
    }


def key_listed(k: ApiKey) -> dict[str, Any]:
    return {
        "id": k.id,
        "name": k.name,
        "keyPrefix": k.key_prefix,
        "scopes": [s.value for s in k.scopes],
        "expiresAt": ts(k.expires_at),
        "isActive": k.is_active,
        "lastUsedAt": ts(k.last_used_at),
        "createdAt": ts(k.created_at),
    }


def created(n: Notification) -> dict[str, Any]:
    return {
        "id": n.id,
        "title": n.title,
        "body": n.body,
        "status": n.status.value,
        "scheduledAt": ts(n.scheduled_at),
        "createdAt": ts(n.created_at),
        "devicesTargeted": n.devices_targeted,
    }


def record(n: Notification, counts: DeliveryCounts | None) -> dict[str, Any]:
    body = {
        **created(n),
        "iconStyle": n.icon_style.value,
        "sound": n.sound.value,
        "priority": n.priority.value,
        "delay": n.delay,
        "customDelay": n.custom_delay,
        "targetDeviceToken": n.target_device_token,
        "metadata": dict(n.metadata),
        "senderName": n.sender_name,
        "senderIcon": n.sender_icon,
        "stream": None if n.stream is None else attrs.asdict(n.stream),
        "failureReason": n.failure_reason,
        "settledAt": ts(n.settled_at),
        "revision": n.revision,
        "collapseKey": n.collapse_key,
        "renotify": n.renotify,
        "supersedes": n.supersedes,
        "ttl": n.ttl,
        "expiresAt": ts(n.expires_at),
        "withdrawnAt": ts(n.withdrawn_at),
        "schedule": None
        if n.schedule is None
        else {"id": n.schedule.id, "occurrenceAt": ts(n.schedule.occurrence_at)},
        "deliverAt": None
        if n.deliver_at is None
        else {"localTime": n.deliver_at.local_time, "date": n.deliver_at.date},
    }
    if counts is not None:  # left out of list items, not null
        body["deliveries"] = {
            "pending": counts.pending,
            "delivered": counts.delivered,
            "failed": counts.failed,
            "held": counts.held,
            "expired": counts.expired,
            "opened": counts.opened,
        }
    return body


def page(items: list[Notification], next_before: str | None) -> dict[str, Any]:
    return {
        "items": [record(n, None) for n in items],
        "nextCursor": NOTIFICATION_CURSOR.encode(next_before),
    }


def stats(s: NotificationStats) -> dict[str, Any]:
    return {
        "total": sum(s.by_status.values()),
        "byStatus": {st.value: s.by_status.get(st.value, 0) for st in NotificationStatus},
        "deliveries": {
            "delivered": s.deliveries.delivered,
            "failed": s.deliveries.failed,
            "pending": s.deliveries.pending,
        },
        "last24h": {"created": s.created_24h, "delivered": s.delivered_24h, "failed": s.failed_24h},
    }


def summary(v: StreamView) -> dict[str, Any]:
    s = v.stream
    return {
        "id": s.id,
        "name": s.name,
        "code": s.code,
        "description": s.description,
        "iconUrl": s.icon_url,
        "subscribers": v.subscribers,
    }


def subscription(sub: Subscription, v: StreamView) -> dict[str, Any]:
    found: dict[str, Any] = {"id": sub.id, "stream": summary(v), "createdAt": ts(sub.created_at)}
    # A mute shows only where there is one (or critical is not allowed through).
    if sub.muted_until is not None or not sub.allow_critical:
        found["allowCritical"] = sub.allow_critical
    if sub.muted_until is not None:
        found["mutedUntil"] = ts(sub.muted_until)
    return found


def send_result(r: SendResult) -> dict[str, Any]:
    return {
        "notificationId": r.notification.id,
        "sent": r.sent,
        "subscribers": r.subscribers,
        "stream": {"name": r.stream.name, "code": r.stream.code},
    }


# (the view built from domain values, the API's JSON of the same values, their types)
SHAPES: list[tuple[Callable[..., View], Callable[..., Any], tuple[Any, ...]]] = [
    (DeviceView.of, device, (Device,)),
    (ApiKeyCreatedView.of, key_created, (ApiKey, str)),
    (ApiKeyView.of, key_listed, (ApiKey,)),
    (NotificationCreatedView.of, created, (Notification,)),
    (NotificationView.of, record, (Notification, DeliveryCounts | None)),
    (
        lambda items, key: NotificationPageView.of(Page(items, key)),
        page,
        (tuple[Notification, ...], str | None),
    ),
    (StatsView.of, stats, (NotificationStats,)),
    (StreamSummaryView.of, summary, (StreamView,)),
    (
        StreamDetailView.of,
        lambda v: {**summary(v), "createdAt": ts(v.stream.created_at)},
        (StreamView,),
    ),
    (LookupView.of, lambda f: {**summary(f.stream), "isSubscribed": f.is_subscribed}, (Lookup,)),
    (SubscriptionView.of, subscription, (Subscription, StreamView)),
    (SendResultView.of, send_result, (SendResult,)),
    (DeletedView.of, lambda i: {"success": True, "id": i}, (str,)),
]


# 30 examples, not 100: each draws every field of the view (a wrong name, a field left
# out or a wrong shape shows in the first few); the timestamps' edge cases have a test of
# their own below. 49 cases of 100 were 20 CPU s of the suite.
EXAMPLES = 30


@pytest.mark.parametrize(
    ("build", "expected", "types_"), SHAPES, ids=lambda x: getattr(x, "__qualname__", "")
)
@settings(deadline=None, max_examples=EXAMPLES)  # the first example builds the converter's hooks
@given(data=st.data())
def test_a_view_s_json_is_the_api_s(
    build: Callable[..., View],
    expected: Callable[..., Any],
    types_: tuple[Any, ...],
    data: st.DataObject,
) -> None:
    args = [data.draw(strategy(t, INSTANTS)) for t in types_]
    if types_[0] == tuple[Notification, ...]:
        args[0] = list(args[0])
    assert to_json(build(*args)) == expected(*args)


VIEWS = [
    cls
    for cls in vars(converter_module).values()
    if isinstance(cls, type) and issubclass(cls, View) and cls is not View
]


@pytest.mark.parametrize("cls", VIEWS, ids=lambda c: c.__name__)
@settings(deadline=None, max_examples=EXAMPLES)
@given(data=st.data())
def test_a_view_reads_back_from_its_json(cls: type[View], data: st.DataObject) -> None:
    view = data.draw(strategy(cls, MS_INSTANTS))
    assert from_json(json.loads(json.dumps(to_json(view))), cls) == view


def test_timestamps_are_utc_with_milliseconds_and_read_back_aware() -> None:
    view = DeletedView.of("x")
    assert to_json(view) == {"success": True, "id": "x"}
    sub = from_json(
        {
            "id": "sub_1",
            "stream": {
                "id": "str_1",
                "name": "Deploys",
                "code": "falcon-7k2q",
                "description": "",
                "iconUrl": None,
                "subscribers": 2,
            },
            "createdAt": "2026-11-21T11:15:30.123+01:00",
        },
        SubscriptionView,
    )
    assert sub.created_at == datetime(2026, 11, 21, 10, 15, 30, 123000, tzinfo=UTC)
    assert sub.created_at.tzinfo is not None
    assert to_json(sub)["createdAt"] == "2026-11-21T10:15:30.123Z"


def test_a_field_the_server_adds_later_is_ignored() -> None:
    assert from_json(
        {"success": True, "id": "dev_1", "newField": 1}, DeletedView
    ) == DeletedView.of("dev_1")


@pytest.mark.parametrize(
    "data",
    [
        {"success": True},  # a field missing
        {"success": "yes", "id": "dev_1"},  # a string where JSON has a boolean
        {"success": True, "id": 7},  # a number where JSON has a string
        ["success", "id"],  # not an object
    ],
)
def test_json_that_is_not_the_view_is_refused(data: Any) -> None:
    # cattrs raises its own exception groups; any error is a refusal here.
    with pytest.raises((TypeError, ValueError, KeyError, ExceptionGroup)):
        from_json(data, DeletedView)
