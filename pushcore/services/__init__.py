"""The use cases, one module per area; orchestration over domain rules and ports."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import attrs

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
from pushcore.services.oidc import OidcService
from pushcore.services.passwords import PasswordHashing
from pushcore.services.people import AccountSummary, PeopleService
from pushcore.services.receipts import ReceiptService
from pushcore.services.recipient import RecipientService
from pushcore.services.replacements import ReplacementService
from pushcore.services.schedules import ScheduleService
from pushcore.services.sessions import Session, SessionService
from pushcore.services.streams import Lookup, SendResult, StreamService
from pushcore.services.tokens import TokenIssuer, TokenVerifier
from pushcore.services.webhooks import WebhookService
from pushcore.services.withdraw import WithdrawService


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
    sessions: SessionService
    # Single sign-on, when PUSHCORE_OIDC_* configure it.
    oidc: OidcService | None
    people: PeopleService
    passwords: PasswordHashing
    wakes: WakeRelay
    webhooks: WebhookService
    schedules: ScheduleService
    # The deliveries list and the receipts devices send back.
    receipts: ReceiptService
    vapid_key: Callable[[], str]
    """The VAPID public key every process on the database shares (base64url), read or
    made on first use: a server asks at its start (a data directory holding another
    pair stops it there), a local command that sends never does."""
    replacements: ReplacementService
    recipients: RecipientService
    """The signed-in person's zone, quiet hours, snooze and mutes."""
    events_apart: bool = False
    """Whether an engine built on these services posts event webhooks from a process of
    its own (a server's or worker's, PUSHCORE_EVENTS_PROCESS: bootstrap.build_engine)."""

    @property
    def withdrawals(self) -> WithdrawService:
        """Withdrawing notifications (stateless: made on each use)."""
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
