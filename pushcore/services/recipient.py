"""The recipient's settings: an account's zone, quiet hours and snooze, a subscription's
mute (API.md, "The recipient's time"). The engine applies them (delivery/quiet.py)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

import attrs

from pushcore.domain.errors import NotFound
from pushcore.domain.model import Account, Plan, StreamView, Subscription
from pushcore.domain.recipient import Mute, RecipientSettings, SettingsPatch
from pushcore.ports import Clock, Store, Waker

# How long a live channel may go by settings read before (a PATCH here is seen at once).
CACHE_FOR = timedelta(seconds=1)
# Above the live channels one process opens at 20,000 files (11,250), so that a
# stream send's events, whose subscribers' settings are read at once, find them.
CACHE_MAX = 50_000


@attrs.define(slots=False, eq=False, repr=False)
class RecipientService:
    """Use cases on the signed-in person's own time."""

    _store: Store
    _clock: Clock
    _waker: Waker
    # Each account's settings as last read here, and when: what a live channel's
    # events are told from (``quiet``) without a query per event.
    _cache: dict[str, tuple[datetime, RecipientSettings]] = attrs.field(factory=dict)

    def settings(self, account_id: str) -> RecipientSettings:
        """The account's settings (the defaults until set)."""
        with self._store.read() as tx:
            found = tx.recipients.settings(account_id)
        self._remember(account_id, found)
        return found

    def settings_of(self, account_ids: Sequence[str]) -> dict[str, RecipientSettings]:
        """Each account's settings, in one read (a stream send's live events), remembered."""
        with self._store.read() as tx:
            found = tx.recipients.settings_of(account_ids)
        for account_id, settings in found.items():
            self._remember(account_id, settings)
        return found

    def recent(self, account_id: str) -> RecipientSettings | None:
        """The account's settings as read here within the last ``CACHE_FOR``, or None
        (then :meth:`settings` reads them). Never blocks."""
        found = self._cache.get(account_id)
        if found is None or self._clock.now() - found[0] > CACHE_FOR:
            return None
        return found[1]

    def _remember(self, account_id: str, settings: RecipientSettings) -> None:
        if len(self._cache) >= CACHE_MAX:
            self._cache.clear()
        self._cache[account_id] = (self._clock.now(), settings)

    def update(self, account_id: str, patch: SettingsPatch) -> RecipientSettings:
        """Replace the given settings; what the account's devices have held is screened
        again at once under the new ones (released to the queue, the engine woken)."""
        now = self._clock.now()
        with self._store.transaction() as tx:
            if tx.accounts.get(account_id) is None:
                tx.accounts.ensure(Account(account_id, Plan.FREE, now))
            updated = patch.applied(tx.recipients.settings(account_id))
            tx.recipients.save(account_id, updated)
            released = tx.recipients.release_account(account_id)
        self._remember(account_id, updated)
        if released:
            self._waker.wake(now)
        return updated

    def mute(
        self, account_id: str, subscription_id: str, mute: Mute
    ) -> tuple[Subscription, StreamView]:
        """Set the mute of one of the caller's subscriptions (404 for another's or none);
        the subscription as listed."""
        with self._store.transaction() as tx:
            if not tx.recipients.mute(subscription_id, account_id, mute):
                raise NotFound("Subscription not found")
            mine = tx.subscriptions.list(account_id)
        return next((s, v) for s, v in mine if s.id == subscription_id)
