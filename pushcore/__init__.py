"""pushcore: scheduled push notifications for self-hosters, as a library.

Build the services with :func:`build_services` and call them; the HTTP server
(``pushcore_http``) and ``pushctl`` (``pushcore_cli``) are thin front doors
onto the same objects.
"""

from pushcore.bootstrap import build_services
from pushcore.config import Settings, load_settings
from pushcore.domain.errors import (
    AlreadySubscribed,
    ConfigError,
    Conflict,
    DeviceNotFound,
    FieldError,
    Forbidden,
    IllegalTransition,
    InvalidJson,
    NotCancellable,
    NotFound,
    OwnStream,
    PayloadTooLarge,
    PlanLimit,
    PushcoreError,
    RateLimited,
    Unauthorized,
    ValidationError,
)
from pushcore.domain.inputs import NewApiKey, NewDevice
from pushcore.domain.model import Account, ApiKey, Device, Plan, Platform, WebPushKeys
from pushcore.domain.scopes import Scope
from pushcore.services import Principal, Services

__version__ = "0.1.0"

__all__ = [
    "Account",
    "AlreadySubscribed",
    "ApiKey",
    "ConfigError",
    "Conflict",
    "Device",
    "DeviceNotFound",
    "FieldError",
    "Forbidden",
    "IllegalTransition",
    "InvalidJson",
    "NewApiKey",
    "NewDevice",
    "NotCancellable",
    "NotFound",
    "OwnStream",
    "PayloadTooLarge",
    "Plan",
    "PlanLimit",
    "Platform",
    "Principal",
    "PushcoreError",
    "RateLimited",
    "Scope",
    "Services",
    "Settings",
    "Unauthorized",
    "ValidationError",
    "WebPushKeys",
    "__version__",
    "build_services",
    "load_settings",
]
