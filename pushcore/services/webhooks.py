"""Event webhooks for senders: endpoints (a secret shown once, rotation, a test event),
their attempts, and the account's event log."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from pushcore.domain.errors import FieldError, NotFound, PlanLimit, ValidationError
from pushcore.domain.events import (
    EVENTS_PAGE_MAX,
    FREE_PLAN_WEBHOOKS,
    PRO_PLAN_WEBHOOKS,
    Attempt,
    Event,
    EventType,
    NewWebhook,
    WebhookChange,
    WebhookEndpoint,
)
from pushcore.domain.model import Plan
from pushcore.domain.paging import Page, cut
from pushcore.domain.webhooks import new_secret
from pushcore.events import new_event_id
from pushcore.ports import Clock, IdGenerator, Random, Store, Transaction, UrlGuard


@attrs.frozen
class CreatedWebhook:
    """A new endpoint and its secret: the only answer the secret appears in."""

    endpoint: WebhookEndpoint
    secret: str


@attrs.define(slots=False, eq=False, repr=False)
class WebhookService:
    """Use cases on event webhook endpoints and the event log."""

    _store: Store
    _clock: Clock
    _ids: IdGenerator
    _random: Random
    _guard: UrlGuard

    def _check_url(self, url: str) -> None:
        try:
            self._guard.check(url)
        except ValueError as exc:
            raise ValidationError([FieldError("url", str(exc))]) from None

    def create(self, account_id: str, request: NewWebhook) -> CreatedWebhook:
        """Create an endpoint within the plan's limit; its secret is returned this once."""
        self._check_url(request.url)
        secret = new_secret(self._random.randbelow)
        endpoint = WebhookEndpoint(
            id=self._ids.new_id("whe"),
            account_id=account_id,
            url=request.url,
            events=tuple(dict.fromkeys(request.events)),
            description=request.description,
            enabled=True,
            secret=secret,
            created_at=self._clock.now(),
        )
        with self._store.transaction() as tx:
            account = tx.accounts.get(account_id)
            plan = account.plan if account is not None else Plan.FREE
            limit = FREE_PLAN_WEBHOOKS if plan is Plan.FREE else PRO_PLAN_WEBHOOKS
            tx.locks.plan_limits(account_id)
            if tx.webhooks.count(account_id) >= limit:
                raise PlanLimit(
                    f"The {plan.value} plan allows {limit} webhook endpoints; delete one"
                    + (" or move to the pro plan" if plan is Plan.FREE else "")
                )
            tx.webhooks.add(endpoint)
        return CreatedWebhook(endpoint, secret)

    def list(self, account_id: str) -> Sequence[WebhookEndpoint]:
        """The account's endpoints, oldest first."""
        with self._store.read() as tx:
            return tx.webhooks.list(account_id)

    def get(self, account_id: str, endpoint_id: str) -> WebhookEndpoint:
        """One endpoint of the account; NotFound otherwise."""
        with self._store.read() as tx:
            return _found(tx, account_id, endpoint_id)

    def update(self, account_id: str, endpoint_id: str, change: WebhookChange) -> WebhookEndpoint:
        """Change the fields given; the endpoint as it now is."""
        if change.url is not None:
            self._check_url(change.url)
        with self._store.transaction() as tx:
            changed = _found(tx, account_id, endpoint_id).changed(change)
            tx.webhooks.update(changed)
        return changed

    def delete(self, account_id: str, endpoint_id: str) -> None:
        """Delete an endpoint and its attempts; NotFound if the account has none so named."""
        with self._store.transaction() as tx:
            if not tx.webhooks.remove(account_id, endpoint_id):
                raise NotFound("Webhook endpoint not found")

    def rotate_secret(self, account_id: str, endpoint_id: str) -> str:
        """A new secret; the old one signs beside it for 24 hours."""
        secret = new_secret(self._random.randbelow)
        with self._store.transaction() as tx:
            endpoint = _found(tx, account_id, endpoint_id)
            tx.webhooks.update(endpoint.rotated(secret, self._clock.now()))
        return secret

    def test(self, account_id: str, endpoint_id: str) -> str:
        """Queue a ``webhook.test`` event for this endpoint alone; its id."""
        now = self._clock.now()
        with self._store.transaction() as tx:
            endpoint = _found(tx, account_id, endpoint_id)
            event = Event(
                id=new_event_id(now),
                account_id=account_id,
                type=EventType.WEBHOOK_TEST.value,
                created_at=now,
                data={"notificationId": None, "endpointId": endpoint.id, "status": "test"},
            )
            # Whatever the endpoint subscribes to, a test goes to it, and only to it.
            tx.events.add([(event, [endpoint.id])], now)
        return event.id

    def attempts(
        self, account_id: str, endpoint_id: str, before: str | None, limit: int
    ) -> Page[Attempt]:
        """The endpoint's attempts, newest first, a page at a time."""
        with self._store.read() as tx:
            _found(tx, account_id, endpoint_id)
            found = tx.events.attempts(endpoint_id, before, limit + 1)
        return cut(found, limit, lambda a: a.event_id)

    def events(
        self, account_id: str, after: str | None, types: Sequence[str], limit: int
    ) -> Page[Event]:
        """The account's events after ``after``, oldest first."""
        limit = max(1, min(limit, EVENTS_PAGE_MAX))
        with self._store.read() as tx:
            found = tx.events.page(account_id, after, types, limit + 1)
        return cut(found, limit, lambda e: e.id)


def _found(tx: Transaction, account_id: str, endpoint_id: str) -> WebhookEndpoint:
    endpoint = tx.webhooks.get(account_id, endpoint_id)
    if endpoint is None:
        raise NotFound("Webhook endpoint not found")
    return endpoint
