"""The inbox: what reached an account, paged, marked read and dismissed."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from pushcore.domain.errors import FieldError, NotFound, ValidationError
from pushcore.domain.inbox import (
    Dismissed,
    InboxItem,
    InboxPage,
    Read,
    is_entry_id,
    legacy_entry_seq,
)
from pushcore.domain.inputs import InboxRead, inbox_read_errors
from pushcore.domain.paging import check_limit, cut
from pushcore.ports import Clock, InboxSignal, Store

MAX_REPLAY = 500  # entries read at once when a live channel catches up


def check_entry_id(value: str, field: str) -> str:
    """``value``, an entry id given as ``field``; ValidationError when it is not one."""
    if not is_entry_id(value):
        raise ValidationError([FieldError(field, "must be an inbox entry id (inb_...)")])
    return value


@attrs.define(slots=False, eq=False, repr=False)
class InboxService:
    """Use cases on an account's inbox (entries are written by the delivery path).

    Reads and dismissals reach the live channels of every process through the
    database where it can tell them (PostgreSQL), else this process's directly.
    """

    _store: Store
    _clock: Clock
    _signal: InboxSignal

    def page(
        self, account_id: str, limit: int = 20, before: str | None = None, unread: bool = False
    ) -> InboxPage:
        """A page of the account's entries, newest first, and its unread count."""
        check_limit(limit)
        cursor = None if before is None else check_entry_id(before, "cursor")
        with self._store.read() as tx:
            below = None
            if cursor is not None:
                seq, exact = tx.inbox.position(account_id, cursor)
                below = seq if exact else seq + 1
            # One more than asked tells whether another page follows.
            found = tx.inbox.page(account_id, limit + 1, below, unread)
            count = tx.inbox.unread(account_id)
        page = cut(found, limit, lambda i: i.entry.id)
        return InboxPage(tuple(page.items), page.next_key, count)

    def resume_point(self, account_id: str, value: str, field: str) -> int:
        """The number after which a channel resuming from entry id ``value`` (given as
        ``field``) replays: that entry's, or for one the account no longer has, its
        latest entry's created before it. An id of before the ids' change (a base32
        number) still resumes where it was."""
        legacy = legacy_entry_seq(value)
        if legacy is not None:
            return legacy
        check_entry_id(value, field)
        with self._store.read() as tx:
            return tx.inbox.position(account_id, value)[0]

    def after(self, account_id: str, seq: int, limit: int = MAX_REPLAY) -> Sequence[InboxItem]:
        """The account's entries numbered above ``seq``, oldest first (a channel's replay)."""
        with self._store.read() as tx:
            return tx.inbox.after([account_id], seq, limit)

    def read(self, account_id: str, request: InboxRead) -> int:
        """Mark entries read; the unread count after. Ids of no entry of the account are
        passed over (already gone, or never there), as GitHub's notifications do."""
        errors = inbox_read_errors(request)
        if errors:
            raise ValidationError(errors)
        # Receipts (and the deliveries' views they bring) load with the first read: a
        # local send loads the inbox service and never reads.
        from pushcore.services.receipts import opened_in_inbox

        now = self._clock.now()
        with self._store.transaction() as tx:
            if request.up_to is not None:
                up_to = check_entry_id(request.up_to, "upTo")
                marked = tx.inbox.mark_read_up_to(
                    account_id, tx.inbox.position(account_id, up_to)[0], now
                )
            else:
                ids = [check_entry_id(i, "ids") for i in request.ids or ()]
                marked = tx.inbox.mark_read(account_id, sorted(set(ids)), now)
            opened_in_inbox(tx, account_id, marked, now)
            unread = tx.inbox.unread(account_id)
            change = Read(tuple(marked), unread)
            announced = bool(marked) and tx.inbox.announce(account_id, change)
        if marked and not announced:
            self._signal.changed(account_id, change)
        return unread

    def dismiss(self, account_id: str, entry: str) -> None:
        """Take an entry out of the inbox; NotFound when the account has no such entry."""
        now = self._clock.now()
        change = Dismissed(entry)
        with self._store.transaction() as tx:
            if not is_entry_id(entry) or not tx.inbox.dismiss(account_id, entry, now):
                raise NotFound("Inbox entry not found")
            announced = tx.inbox.announce(account_id, change)
        if not announced:
            self._signal.changed(account_id, change)
