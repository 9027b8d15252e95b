"""pushcore: scheduled push notifications for self-hosters, as a library.

Two ways in: build the services with :func:`build_services` and call them
in-process, or talk to a running server with :class:`Client` /
:class:`AsyncClient`. The HTTP server (``pushcore_http``) and ``pushctl``
(``pushcore_cli``) are thin front doors onto the same objects.
"""

from pushcore.bootstrap import build_engine, build_services
from pushcore.client import AsyncClient, Client
from pushcore.config import Settings, load_settings
from pushcore.converter import (
    ApiKeyCreatedView,
    ApiKeyView,
    DeletedView,
    DeliveryCountsView,
    DeviceView,
    Last24hView,
    LookupView,
    NotificationCreatedView,
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
    MethodNotAllowed,
    NotCancellable,
    NotFound,
    OwnStream,
    PayloadTooLarge,
    PlanLimit,
    PushcoreError,
    RateLimited,
    ServerError,
    Unauthorized,
    Unavailable,
    ValidationError,
)
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
from pushcore.version import __version__

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
    "Last24hView",
    "LookupView",
    "MethodNotAllowed",
    "NewApiKey",
    "NewDevice",
    "NewNotification",
    "NewStream",
    "NotCancellable",
    "NotFound",
    "NotificationCreatedView",
    "NotificationDetail",
    "NotificationStatus",
    "NotificationView",
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
    _value = globals()[_name]
    if isinstance(_value, type) and issubclass(_value, PushcoreError):
        _value.__module__ = __name__
