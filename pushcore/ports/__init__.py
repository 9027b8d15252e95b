"""The ports: what the services need from the outside world, as Protocols.

Adapters (storage, clocks, gateways, URL guards) satisfy these structurally;
fakes in ``tests/fakes`` do too, and ``mypy --strict`` checks both. One
module per concern: ``system`` (time, ids, randomness), ``stores`` (the
store, its transactions, lock intents, heartbeats), ``accounts``,
``notifications``, ``queue``, ``streams``, ``idempotency``, ``people``, ``inbox``
(the repositories), ``oidc`` (single sign-on's rows and the OpenID provider),
``delivery`` (gateways and the engine's observer and waker), ``web`` (URL checks),
``recurrence`` (RRULE expansion for recurring schedules).
"""

from pushcore.ports.accounts import AccountRepository, ApiKeyRepository, DeviceRepository
from pushcore.ports.delivery import DeliveryObserver, EachGateway, Gateway, Waker
from pushcore.ports.idempotency import IdempotencyRepository
from pushcore.ports.inbox import InboxRepository, InboxSignal
from pushcore.ports.notifications import (
    DeliveryProgress,
    NotificationRepository,
    RetentionRepository,
)
from pushcore.ports.oidc import IdentityProvider, SignInRepository
from pushcore.ports.people import (
    PasswordRepository,
    RefreshTokenRepository,
    SessionRevocationRepository,
)
from pushcore.ports.queue import DeliveryQueue, DeliverySchedule
from pushcore.ports.recurrence import RuleExpander
from pushcore.ports.stores import EngineRepository, Locks, Store, Together, Transaction, Writes
from pushcore.ports.streams import StreamRepository, SubscriptionRepository
from pushcore.ports.system import Clock, IdGenerator, Random
from pushcore.ports.web import IconProbe, UrlGuard

__all__ = [
    "AccountRepository",
    "ApiKeyRepository",
    "Clock",
    "DeliveryObserver",
    "DeliveryProgress",
    "DeliveryQueue",
    "DeliverySchedule",
    "DeviceRepository",
    "EachGateway",
    "EngineRepository",
    "Gateway",
    "IconProbe",
    "IdGenerator",
    "IdempotencyRepository",
    "IdentityProvider",
    "InboxRepository",
    "InboxSignal",
    "Locks",
    "NotificationRepository",
    "PasswordRepository",
    "Random",
    "RefreshTokenRepository",
    "RetentionRepository",
    "RuleExpander",
    "SessionRevocationRepository",
    "SignInRepository",
    "Store",
    "StreamRepository",
    "SubscriptionRepository",
    "Together",
    "Transaction",
    "UrlGuard",
    "Waker",
    "Writes",
]
