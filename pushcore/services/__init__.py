"""The use cases, one module per area; orchestration over domain rules and ports."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import attrs

from pushcore._lazy import lazy_names
from pushcore.config import Settings
from pushcore.domain.paging import Page
from pushcore.live import LiveHub
from pushcore.ports import Clock, Store, Writes
from pushcore.services.accounts import AccountService
from pushcore.services.auth import AuthService, CredentialKind, Principal
from pushcore.services.devices import DeviceService, Registration
from pushcore.services.idempotency import Claim, IdempotencyService, Replay
from pushcore.services.inbox import InboxService
from pushcore.services.keys import CreatedKey, KeyService
from pushcore.services.notifications import (
    NotificationDetail,
    NotificationService,
    WakeRelay,
)
from pushcore.services.passwords import PasswordHashing
from pushcore.services.streams import Lookup, SendResult, StreamService
from pushcore.services.tokens import TokenIssuer, TokenVerifier

if TYPE_CHECKING:
    # Made on first use (Later below), so their modules load only then: a local send
    # runs none of them (docs/benchmarks.md, "Quick start").
    from pushcore.services.oidc import OidcService
    from pushcore.services.people import AccountSummary, PeopleService
    from pushcore.services.receipts import ReceiptService
    from pushcore.services.recipient import RecipientService
    from pushcore.services.replacements import ReplacementService
    from pushcore.services.schedules import ScheduleService
    from pushcore.services.sessions import Session, SessionService
    from pushcore.services.webhooks import WebhookService
    from pushcore.services.withdraw import WithdrawService

__getattr__ = lazy_names(
    __name__,
    {
        "AccountSummary": "pushcore.services.people",
        "OidcService": "pushcore.services.oidc",
        "PeopleService": "pushcore.services.people",
        "ReceiptService": "pushcore.services.receipts",
        "RecipientService": "pushcore.services.recipient",
        "ReplacementService": "pushcore.services.replacements",
        "ScheduleService": "pushcore.services.schedules",
        "Session": "pushcore.services.sessions",
        "SessionService": "pushcore.services.sessions",
        "WebhookService": "pushcore.services.webhooks",
    },
)

T = TypeVar("T")


class Later(Generic[T]):
    """A service made on its first use, once, by whichever thread asks first."""

    __slots__ = ("_lock", "_made", "_make")

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._made: Any = _UNMADE
        self._lock = threading.Lock()

    def get(self) -> T:
        """The service, made now if it was not yet."""
        made = self._made
        if made is _UNMADE:
            with self._lock:
                if self._made is _UNMADE:
                    self._made = self._make()
                made = self._made
        return made  # type: ignore[no-any-return]


_UNMADE: Any = object()


@attrs.frozen
class Services:
    """Everything the front doors (HTTP, CLI, library users) call. Built by bootstrap."""

    settings: Settings
    store: Store
    writes: Writes
    clock: Clock
    accounts: AccountService
    auth: AuthService
    keys: KeyService
    devices: DeviceService
    idempotency: IdempotencyService
    notifications: NotificationService
    streams: StreamService
    inbox: InboxService
    live: LiveHub
    tokens: TokenIssuer
    # Single sign-on, when PUSHCORE_OIDC_* configure it.
    oidc: OidcService | None
    passwords: PasswordHashing
    wakes: WakeRelay
    vapid_key: Callable[[], str]
    """The VAPID public key every process on the database shares (base64url), read or
    made on first use: a server asks at its start (a data directory holding another
    pair stops it there), a local command that sends never does."""
    _sessions: Later[SessionService] = attrs.field(alias="sessions")
    _people: Later[PeopleService] = attrs.field(alias="people")
    _webhooks: Later[WebhookService] = attrs.field(alias="webhooks")
    _schedules: Later[ScheduleService] = attrs.field(alias="schedules")
    _receipts: Later[ReceiptService] = attrs.field(alias="receipts")
    _replacements: Later[ReplacementService] = attrs.field(alias="replacements")
    _recipients: Later[RecipientService] = attrs.field(alias="recipients")
    events_apart: bool = False
    """Whether an engine built on these services posts event webhooks from a process of
    its own (a server's or worker's, PUSHCORE_EVENTS_PROCESS: bootstrap.build_engine)."""

    @property
    def sessions(self) -> SessionService:
        """Sign-in sessions: refresh tokens and their rotation."""
        return self._sessions.get()

    @property
    def people(self) -> PeopleService:
        """Sign-up, passwords and the account's own page."""
        return self._people.get()

    @property
    def webhooks(self) -> WebhookService:
        """The account's event webhook endpoints."""
        return self._webhooks.get()

    @property
    def schedules(self) -> ScheduleService:
        """Recurring schedules."""
        return self._schedules.get()

    @property
    def receipts(self) -> ReceiptService:
        """The deliveries list and the receipts devices send back."""
        return self._receipts.get()

    @property
    def replacements(self) -> ReplacementService:
        """Replacing a sent notification by a new one."""
        return self._replacements.get()

    @property
    def recipients(self) -> RecipientService:
        """The signed-in person's zone, quiet hours, snooze and mutes."""
        return self._recipients.get()

    @property
    def withdrawals(self) -> WithdrawService:
        """Withdrawing notifications (stateless: made on each use)."""
        from pushcore.services.withdraw import WithdrawService

        return WithdrawService(self.writes, self.clock, self.wakes, self.live)

    @property
    def vapid_public_key(self) -> str:
        """The shared VAPID public key, as a web client subscribes with it."""
        return self.vapid_key()

    def engine_seen_since(self, window: timedelta) -> bool:
        """Whether a delivery engine (``serve`` or ``worker``) has said it was working on
        this database within ``window`` (engines beat every few seconds)."""
        with self.store.read() as tx:
            seen = tx.engines.last_seen()
        return seen is not None and seen >= self.clock.now() - window

    def close(self) -> None:
        """Commit what was handed to the writer, then release the database connections."""
        self.writes.close()
        self.passwords.close()
        self.live.close()
        self.store.close()


__all__ = [
    "AccountService",
    "AccountSummary",
    "AuthService",
    "Claim",
    "CreatedKey",
    "CredentialKind",
    "DeviceService",
    "IdempotencyService",
    "InboxService",
    "KeyService",
    "Lookup",
    "NotificationDetail",
    "NotificationService",
    "OidcService",
    "Page",
    "PasswordHashing",
    "PeopleService",
    "Principal",
    "ReceiptService",
    "Registration",
    "ReplacementService",
    "Replay",
    "ScheduleService",
    "SendResult",
    "Services",
    "Session",
    "SessionService",
    "StreamService",
    "TokenIssuer",
    "TokenVerifier",
    "WakeRelay",
]
