"""pushcore: scheduled push notifications for self-hosters, as a library.

Two ways in: build the services with :func:`build_services` and call them
in-process, or talk to a running server with :class:`Client` /
:class:`AsyncClient`. The HTTP server (``pushcore_http``) and ``pushctl``
(``pushcore_cli``) are thin front doors onto the same objects.
"""

import importlib
from typing import TYPE_CHECKING, Any

from pushcore._lazy import lazy_names
from pushcore.domain.errors import (
    AlreadySubscribed,
    ConfigError,
    Conflict,
    ConnectionFailed,
    DeviceNotFound,
    FieldError,
    Forbidden,
    IdempotencyKeyInUse,
    IdempotencyKeyReused,
    IllegalTransition,
    InvalidJson,
    InvalidSignature,
    MethodNotAllowed,
    NotCancellable,
    NotEditable,
    NotFound,
    OwnStream,
    PayloadTooLarge,
    PlanLimit,
    PushcoreError,
    RateLimited,
    RevisionMismatch,
    ServerError,
    Unauthorized,
    Unavailable,
    ValidationError,
)

if TYPE_CHECKING:
    from pushcore.bootstrap import build_engine, build_services
    from pushcore.client import AsyncClient, Client
    from pushcore.config import Settings, load_settings
    from pushcore.converter import (
        ApiKeyCreatedView,
        ApiKeyView,
        DeletedView,
        DeliveryCountsView,
        DeliveryPageView,
        DeliveryView,
        DeviceView,
        Last24hView,
        LookupView,
        NotificationCreatedView,
        NotificationDeliveriesView,
        NotificationView,
        RegisteredDeviceView,
        SendResultView,
        StatsView,
        StreamDetailView,
        StreamLabelView,
        StreamRefView,
        StreamSummaryView,
        SubscriptionView,
    )
    from pushcore.converter.notifications import ScheduleRefView
    from pushcore.converter.schedules import OccurrenceView, ScheduleView
    from pushcore.domain.inputs import NewApiKey, NewDevice, NewNotification, NewStream, StreamSend
    from pushcore.domain.model import (
        Account,
        ApiKey,
        Device,
        IconStyle,
        Plan,
        Platform,
        Priority,
        Sound,
        WebPushKeys,
    )
    from pushcore.domain.scheduling import Delay
    from pushcore.domain.scopes import Scope
    from pushcore.domain.states import NotificationStatus
    from pushcore.services import Principal, Services
    from pushcore.services.notifications import NotificationDetail

# Where each public name lives; imported when first asked for (PEP 562).
_LAZY = {
    "build_engine": "pushcore.bootstrap",
    "build_services": "pushcore.bootstrap",
    "AsyncClient": "pushcore.client",
    "Client": "pushcore.client",
    "Settings": "pushcore.config",
    "load_settings": "pushcore.config",
    "ApiKeyCreatedView": "pushcore.converter",
    "ApiKeyView": "pushcore.converter",
    "DeletedView": "pushcore.converter",
    "DeliveryCountsView": "pushcore.converter",
    "DeliveryPageView": "pushcore.converter",
    "DeliveryView": "pushcore.converter",
    "DeviceView": "pushcore.converter",
    "Last24hView": "pushcore.converter",
    "LookupView": "pushcore.converter",
    "NotificationCreatedView": "pushcore.converter",
    "NotificationDeliveriesView": "pushcore.converter",
    "NotificationView": "pushcore.converter",
    "RegisteredDeviceView": "pushcore.converter",
    "SendResultView": "pushcore.converter",
    "StatsView": "pushcore.converter",
    "StreamDetailView": "pushcore.converter",
    "StreamLabelView": "pushcore.converter",
    "StreamRefView": "pushcore.converter",
    "OccurrenceView": "pushcore.converter.schedules",
    "ScheduleView": "pushcore.converter.schedules",
    "ScheduleRefView": "pushcore.converter.notifications",
    "StreamSummaryView": "pushcore.converter",
    "SubscriptionView": "pushcore.converter",
    "NewApiKey": "pushcore.domain.inputs",
    "NewDevice": "pushcore.domain.inputs",
    "NewNotification": "pushcore.domain.inputs",
    "NewStream": "pushcore.domain.inputs",
    "StreamSend": "pushcore.domain.inputs",
    "Account": "pushcore.domain.model",
    "ApiKey": "pushcore.domain.model",
    "Device": "pushcore.domain.model",
    "IconStyle": "pushcore.domain.model",
    "Plan": "pushcore.domain.model",
    "Platform": "pushcore.domain.model",
    "Priority": "pushcore.domain.model",
    "Sound": "pushcore.domain.model",
    "WebPushKeys": "pushcore.domain.model",
    "Delay": "pushcore.domain.scheduling",
    "Scope": "pushcore.domain.scopes",
    "NotificationStatus": "pushcore.domain.states",
    "Principal": "pushcore.services",
    "Services": "pushcore.services",
    "NotificationDetail": "pushcore.services.notifications",
}

# Eager: a module of one constant (metrics and the OpenAPI document read it there too).
from pushcore.version import __version__  # noqa: E402

__all__ = [
    "Account",
    "AlreadySubscribed",
    "ApiKey",
    "ApiKeyCreatedView",
    "ApiKeyView",
    "AsyncClient",
    "Client",
    "ConfigError",
    "Conflict",
    "ConnectionFailed",
    "Delay",
    "DeletedView",
    "DeliveryCountsView",
    "DeliveryPageView",
    "DeliveryView",
    "Device",
    "DeviceNotFound",
    "DeviceView",
    "FieldError",
    "Forbidden",
    "IconStyle",
    "IdempotencyKeyInUse",
    "IdempotencyKeyReused",
    "IllegalTransition",
    "InvalidJson",
    "InvalidSignature",
    "Last24hView",
    "LookupView",
    "MethodNotAllowed",
    "NewApiKey",
    "NewDevice",
    "NewNotification",
    "NewStream",
    "NotCancellable",
    "NotEditable",
    "NotFound",
    "NotificationCreatedView",
    "NotificationDeliveriesView",
    "NotificationDetail",
    "NotificationStatus",
    "NotificationView",
    "OccurrenceView",
    "OwnStream",
    "PayloadTooLarge",
    "Plan",
    "PlanLimit",
    "Platform",
    "Principal",
    "Priority",
    "PushcoreError",
    "RateLimited",
    "RegisteredDeviceView",
    "RevisionMismatch",
    "ScheduleRefView",
    "ScheduleView",
    "Scope",
    "SendResultView",
    "ServerError",
    "Services",
    "Settings",
    "Sound",
    "StatsView",
    "StreamDetailView",
    "StreamLabelView",
    "StreamRefView",
    "StreamSend",
    "StreamSummaryView",
    "SubscriptionView",
    "Unauthorized",
    "Unavailable",
    "ValidationError",
    "WebPushKeys",
    "__version__",
    "build_engine",
    "build_services",
    "load_settings",
]

# The error classes show as pushcore.NotFound (not pushcore.domain.errors.NotFound)
# in tracebacks and reprs, as httpx's do: the public name is the one to catch.
for _name in __all__:
    _value = globals().get(_name)
    if isinstance(_value, type) and issubclass(_value, PushcoreError):
        _value.__module__ = __name__


_lazy_name = lazy_names(__name__, _LAZY)


def __getattr__(name: str) -> Any:
    """The rest of the public API, imported on first use: a program that only needs
    the Client loads no server code (no aiohttp, h2, argon2, uvicorn)."""
    if name == "webhooks":  # the receivers' module, pushcore.webhooks.verify
        return importlib.import_module("pushcore.webhooks")
    return _lazy_name(name)


def __dir__() -> list[str]:
    return sorted(__all__)
