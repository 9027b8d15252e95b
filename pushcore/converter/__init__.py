"""JSON <-> domain: one cattrs converter, request structuring, and response views by resource.

The converter and the base of the views load with the package; each resource's
views on first use (PEP 562, as ``pushcore/__init__.py``): a local ``pushctl
send`` needs the notifications' views, not every resource's (docs/benchmarks.md,
"Quick start"). Only ``_base`` and ``_views`` register hooks on the converter,
so what is loaded later changes nothing of how values are converted.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from pushcore.converter._base import (
    camel,
    converter,
    maybe_timestamp,
    parse_timestamp,
    structure_request,
)
from pushcore.converter._views import DeletedView, View, from_json, to_json

if TYPE_CHECKING:
    from pushcore.converter._schema import components, example, json_schema
    from pushcore.converter.batches import BatchCreatedView, NewNotificationBatch, structure_batch
    from pushcore.converter.content import (
        ContentView,
        DeliveryPayloadView,
        SenderView,
        delivery_payload,
    )
    from pushcore.converter.deliveries import DeliveryPageView, DeliveryView
    from pushcore.converter.devices import DeviceView, RegisteredDeviceView, device_json
    from pushcore.converter.inbox import (
        DismissedEventView,
        InboxEntryView,
        InboxPageView,
        ReadEventView,
        UnreadView,
        WithdrawnEventView,
    )
    from pushcore.converter.keys import (
        ApiKeyCreatedView,
        ApiKeyView,
        api_key_created_json,
        api_key_json,
    )
    from pushcore.converter.notifications import (
        CURSOR_EXAMPLE,
        CURSOR_PATTERN,
        NOTIFICATION_CURSOR,
        DeliveryCountsView,
        Last24hView,
        NotificationCreatedView,
        NotificationDeliveriesView,
        NotificationPageView,
        NotificationView,
        StatsView,
        StreamRefView,
        notification_created_json,
        notification_json,
        parse_list_query,
        request_json,
        stats_json,
    )
    from pushcore.converter.people import (
        AccountView,
        AuthMethodsView,
        DoneView,
        LinkStartView,
        OidcMethodView,
        SessionAccountView,
        SessionView,
    )
    from pushcore.converter.streams import (
        LookupView,
        SendResultView,
        SharedStreamView,
        StreamDetailView,
        StreamLabelView,
        StreamSummaryView,
        SubscriptionView,
        lookup_json,
        send_result_json,
        stream_json,
        subscription_json,
    )
    from pushcore.domain.timefmt import format_timestamp

_HOMES = {
    "components": "pushcore.converter._schema",
    "example": "pushcore.converter._schema",
    "json_schema": "pushcore.converter._schema",
    "BatchCreatedView": "pushcore.converter.batches",
    "NewNotificationBatch": "pushcore.converter.batches",
    "structure_batch": "pushcore.converter.batches",
    "ContentView": "pushcore.converter.content",
    "DeliveryPayloadView": "pushcore.converter.content",
    "SenderView": "pushcore.converter.content",
    "delivery_payload": "pushcore.converter.content",
    "DeliveryPageView": "pushcore.converter.deliveries",
    "DeliveryView": "pushcore.converter.deliveries",
    "DeviceView": "pushcore.converter.devices",
    "RegisteredDeviceView": "pushcore.converter.devices",
    "device_json": "pushcore.converter.devices",
    "DismissedEventView": "pushcore.converter.inbox",
    "InboxEntryView": "pushcore.converter.inbox",
    "InboxPageView": "pushcore.converter.inbox",
    "ReadEventView": "pushcore.converter.inbox",
    "UnreadView": "pushcore.converter.inbox",
    "WithdrawnEventView": "pushcore.converter.inbox",
    "ApiKeyCreatedView": "pushcore.converter.keys",
    "ApiKeyView": "pushcore.converter.keys",
    "api_key_created_json": "pushcore.converter.keys",
    "api_key_json": "pushcore.converter.keys",
    "CURSOR_EXAMPLE": "pushcore.converter.notifications",
    "CURSOR_PATTERN": "pushcore.converter.notifications",
    "NOTIFICATION_CURSOR": "pushcore.converter.notifications",
    "DeliveryCountsView": "pushcore.converter.notifications",
    "Last24hView": "pushcore.converter.notifications",
    "NotificationCreatedView": "pushcore.converter.notifications",
    "NotificationDeliveriesView": "pushcore.converter.notifications",
    "NotificationPageView": "pushcore.converter.notifications",
    "NotificationView": "pushcore.converter.notifications",
    "StatsView": "pushcore.converter.notifications",
    "StreamRefView": "pushcore.converter.notifications",
    "notification_created_json": "pushcore.converter.notifications",
    "notification_json": "pushcore.converter.notifications",
    "parse_list_query": "pushcore.converter.notifications",
    "request_json": "pushcore.converter.notifications",
    "stats_json": "pushcore.converter.notifications",
    "AccountView": "pushcore.converter.people",
    "AuthMethodsView": "pushcore.converter.people",
    "DoneView": "pushcore.converter.people",
    "LinkStartView": "pushcore.converter.people",
    "OidcMethodView": "pushcore.converter.people",
    "SessionAccountView": "pushcore.converter.people",
    "SessionView": "pushcore.converter.people",
    "LookupView": "pushcore.converter.streams",
    "SendResultView": "pushcore.converter.streams",
    "SharedStreamView": "pushcore.converter.streams",
    "StreamDetailView": "pushcore.converter.streams",
    "StreamLabelView": "pushcore.converter.streams",
    "StreamSummaryView": "pushcore.converter.streams",
    "SubscriptionView": "pushcore.converter.streams",
    "lookup_json": "pushcore.converter.streams",
    "send_result_json": "pushcore.converter.streams",
    "stream_json": "pushcore.converter.streams",
    "subscription_json": "pushcore.converter.streams",
    "format_timestamp": "pushcore.domain.timefmt",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


__all__ = [
    "CURSOR_EXAMPLE",
    "CURSOR_PATTERN",
    "NOTIFICATION_CURSOR",
    "AccountView",
    "ApiKeyCreatedView",
    "ApiKeyView",
    "AuthMethodsView",
    "BatchCreatedView",
    "ContentView",
    "DeletedView",
    "DeliveryCountsView",
    "DeliveryPageView",
    "DeliveryPayloadView",
    "DeliveryView",
    "DeviceView",
    "DismissedEventView",
    "DoneView",
    "InboxEntryView",
    "InboxPageView",
    "Last24hView",
    "LinkStartView",
    "LookupView",
    "NewNotificationBatch",
    "NotificationCreatedView",
    "NotificationDeliveriesView",
    "NotificationPageView",
    "NotificationView",
    "OidcMethodView",
    "ReadEventView",
    "RegisteredDeviceView",
    "SendResultView",
    "SenderView",
    "SessionAccountView",
    "SessionView",
    "SharedStreamView",
    "StatsView",
    "StreamDetailView",
    "StreamLabelView",
    "StreamRefView",
    "StreamSummaryView",
    "SubscriptionView",
    "UnreadView",
    "View",
    "WithdrawnEventView",
    "api_key_created_json",
    "api_key_json",
    "camel",
    "components",
    "converter",
    "delivery_payload",
    "device_json",
    "example",
    "format_timestamp",
    "from_json",
    "json_schema",
    "lookup_json",
    "maybe_timestamp",
    "notification_created_json",
    "notification_json",
    "parse_list_query",
    "parse_timestamp",
    "request_json",
    "send_result_json",
    "stats_json",
    "stream_json",
    "structure_batch",
    "structure_request",
    "subscription_json",
    "to_json",
]
