"""The inbox: what reached an account, paged, marked read and dismissed."""

from __future__ import annotations

from collections.abc import Sequence

from pushcore.domain.errors import FieldError, NotFound, ValidationError
from pushcore.domain.inbox import Dismissed, InboxItem, InboxPage, Read, entry_id, entry_seq
from pushcore.domain.inputs import InboxRead, inbox_read_errors
from pushcore.ports import Clock, InboxSignal, Store

MAX_PAGE = 100
MAX_REPLAY = 500  # entries read at once when a live channel catches up


def parse_entry_id(value: str, field: str) -> int:
    """The number of an entry id given as ``field``; ValidationError when it is not one."""
    seq = entry_seq(value)
    if seq is None:
        raise ValidationError([FieldError(field, "must be an inbox entry id (inb_...)")])
    return seq


class InboxService:
    """Use cases on an account's inbox (entries are written by the delivery path).

    Reads and dismissals reach the live channels of every process through the
    database where it can tell them (PostgreSQL), else this process's directly.
    """

    def __init__(self, store: Store, clock: Clock, signal: InboxSignal) -> None:
        self._store = store
        self._clock = clock
        self._signal = signal

    def page(
        self, account_id: str, limit: int = 20, before: str | None = None, unread: bool = False
    ) -> InboxPage:
        """A page of the account's entries, newest first, and its unread count."""
        if not 1 <= limit <= MAX_PAGE:
            raise ValidationError([FieldError("limit", f"must be from 1 to {MAX_PAGE}")])
        below = None if before is None else parse_entry_id(before, "cursor")
        with self._store.read() as tx:
            # One more than asked tells whether another page follows.
            found = tx.inbox.page(account_id, limit + 1, below, unread)
            count = tx.inbox.unread(account_id)
        items = tuple(found[:limit])
        more = len(found) > limit
        return InboxPage(items, items[-1].entry.seq if more else None, count)

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
        now = self._clock.now()
        with self._store.transaction() as tx:
            if request.up_to is not None:
                up_to = parse_entry_id(request.up_to, "upTo")
                marked = tx.inbox.mark_read_up_to(account_id, up_to, now)
            else:
                seqs = [parse_entry_id(i, "ids") for i in request.ids or ()]
                marked = tx.inbox.mark_read(account_id, sorted(set(seqs)), now)
            unread = tx.inbox.unread(account_id)
            change = Read(tuple(entry_id(s) for s in marked), unread)
            announced = bool(marked) and tx.inbox.announce(account_id, change)
        if marked and not announced:
            self._signal.changed(account_id, change)
        return unread

    def dismiss(self, account_id: str, entry: str) -> None:
        """Take an entry out of the inbox; NotFound when the account has no such entry."""
        seq = entry_seq(entry)
        now = self._clock.now()
        change = Dismissed(entry)
        with self._store.transaction() as tx:
            if seq is None or not tx.inbox.dismiss(account_id, seq, now):
                raise NotFound("Inbox entry not found")
            announced = tx.inbox.announce(account_id, change)
        if not announced:
            self._signal.changed(account_id, change)
