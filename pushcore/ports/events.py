"""Event webhooks' repositories: endpoints, and events with their attempts (the outbox)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pushcore.domain.events import Attempt, Event, WebhookEndpoint


class WebhookRepository(Protocol):
    """An account's event webhook endpoints."""

    def add(self, endpoint: WebhookEndpoint) -> None:
        """Insert a new endpoint; KeyError if its id is taken."""
        ...

    def get(self, account_id: str, endpoint_id: str) -> WebhookEndpoint | None:
        """The account's endpoint with this id, or None."""
        ...

    def by_ids(self, endpoint_ids: Sequence[str]) -> list[WebhookEndpoint]:
        """These endpoints, those that still exist."""
        ...

    def list(self, account_id: str, *, enabled_only: bool = False) -> list[WebhookEndpoint]:
        """The account's endpoints, oldest first."""
        ...

    def count(self, account_id: str) -> int:
        """How many endpoints the account has."""
        ...

    def any(self) -> bool:
        """Whether any account has an endpoint."""
        ...

    def update(self, endpoint: WebhookEndpoint) -> None:
        """Store the endpoint's changed state."""
        ...

    def disable(self, endpoint_id: str, reason: str) -> None:
        """Stop sending to it (``reason`` is its disabledReason); its pending attempts fail."""
        ...

    def remove(self, account_id: str, endpoint_id: str) -> bool:
        """Delete it and its attempts; whether it existed in the account."""
        ...


class EventRepository(Protocol):
    """Events (the outbox and the event log) and each one's attempt per endpoint."""

    def add(self, events: Sequence[tuple[Event, Sequence[str]]], due: datetime) -> None:
        """Insert each event with a pending attempt per endpoint id beside it, due at
        ``due``."""
        ...

    def by_ids(self, event_ids: Sequence[str]) -> list[Event]:
        """These events, those still kept."""
        ...

    def page(
        self, account_id: str, after: str | None, types: Sequence[str], limit: int
    ) -> list[Event]:
        """The account's events after the event id ``after``, oldest first, of ``types``
        (all when empty)."""
        ...

    def attempts(self, endpoint_id: str, before: str | None, limit: int) -> list[Attempt]:
        """The endpoint's attempts, newest event first, before the event id ``before``."""
        ...

    def claim(
        self,
        now: datetime,
        owner: str,
        lease_until: datetime,
        limit: int,
        per_endpoint: int,
        busy: Sequence[str],
    ) -> list[Attempt]:
        """Lease due pending attempts (and those whose lease ran out) of enabled endpoints
        to ``owner``, each to one claimer only: up to ``limit``, at most ``per_endpoint``
        per endpoint, none for the endpoints in ``busy``."""
        ...

    def record(self, attempt: Attempt, owner: str) -> bool:
        """Store an attempt's latest try; False when ``owner`` no longer holds it."""
        ...

    def record_many(self, attempts: Sequence[Attempt], owner: str) -> None:
        """Store each attempt's latest try in one statement, those ``owner`` still holds."""
        ...

    def first_attempt_at(self, endpoint_id: str, event_id: str) -> datetime | None:
        """When the event was made due to the endpoint, or None."""
        ...

    def next_due_at(self) -> datetime | None:
        """The earliest pending attempt's due time, or None."""
        ...

    def delete_before(self, before: datetime, limit: int) -> int:
        """Delete up to ``limit`` events made before ``before``, with their attempts."""
        ...
