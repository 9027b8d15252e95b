"""Store ports of the inbox, and the signal that new entries were committed.

Raises, besides what a docstring says: the database's own errors when it
fails, ValueError for a naive datetime.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from pushcore.domain.inbox import InboxChange, InboxItem
from pushcore.domain.model import Notification


class InboxRepository(Protocol):
    """Inbox entries: written when notifications fall due, read and dismissed by people.

    Entries are numbered (``seq``) in the order their transactions commit, on
    every database: a transaction that writes entries holds the inbox's turn
    (PostgreSQL: an advisory lock; SQLite: its one writer) from its first entry
    to its COMMIT, so write them last.
    """

    def deliver_own(self, notification_ids: Sequence[str], now: datetime) -> int:
        """Put these notifications, which the caller found due (the engine, within its
        lead), in their owners' inboxes unless there already, except stream sends and
        cancelled ones; how many entries were written. Delivered at the due time, or
        ``now`` when that is later."""
        ...

    def deliver_local(self, delivery_ids: Sequence[str], now: datetime) -> int:
        """Put the notifications of these claimed deliveries (local-time stream sends)
        in their devices' owners' inboxes at ``now``, unless there already; how many."""
        ...

    def fan_out(self, notification: Notification, stream_id: str, at: datetime) -> int:
        """An entry of ``notification`` for every subscriber of the stream (the
        publisher is none: it cannot subscribe to its own stream); how many."""
        ...

    def fan_out_again(
        self, notification: Notification, original_id: str, at: datetime, waiting: bool = False
    ) -> int:
        """An entry of ``notification`` for every account with an entry of
        ``original_id`` (a stream send's subscribers at that send; with ``waiting``, also
        a local-time send's still waiting for their time); how many."""
        ...

    def replace_older(self, notifications: Sequence[Notification], now: datetime) -> int:
        """Entries of these (just written) replace their recipients' older entries with
        the same sender and collapse key; how many older entries left the inbox."""
        ...

    def page(
        self, account_id: str, limit: int, before: int | None, unread_only: bool
    ) -> Sequence[InboxItem]:
        """The account's entries (not dismissed), newest first, below ``before``."""
        ...

    def after(self, account_ids: Sequence[str] | None, seq: int, limit: int) -> Sequence[InboxItem]:
        """Entries (not dismissed) of these accounts (None: of every account) numbered
        above ``seq``, oldest first."""
        ...

    def position(self, account_id: str, public_id: str) -> tuple[int, bool]:
        """The number of the account's entry ``public_id`` and True; else (gone, or not
        the account's) the number of its latest entry with an older id (0) and False."""
        ...

    def last_seq(self) -> int:
        """The number of the latest entry of any account (0 when there is none)."""
        ...

    def unread(self, account_id: str) -> int:
        """How many of the account's entries are neither read nor dismissed."""
        ...

    def mark_read(self, account_id: str, ids: Sequence[str], at: datetime) -> list[str]:
        """Mark these unread entries of the account read; the ids that were, oldest first."""
        ...

    def mark_read_up_to(self, account_id: str, seq: int, at: datetime) -> list[str]:
        """Mark the account's unread entries numbered up to ``seq`` read; their ids."""
        ...

    def dismiss(self, account_id: str, public_id: str, at: datetime) -> bool:
        """Take the entry out of the account's inbox; False when it has no such entry."""
        ...

    def withdraw(self, notification_ids: Sequence[str]) -> dict[str, list[str]]:
        """Take these notifications' entries out of every inbox; the entry ids by account."""
        ...

    def expire(self, now: datetime, limit: int) -> dict[str, list[str]]:
        """Take up to ``limit`` entries whose notification expired by ``now`` out of the
        inboxes; the entry ids by account."""
        ...

    def announce(self, account_id: str, change: InboxChange) -> bool:
        """Tell the live channels of every process sharing the database of a read or a
        dismissal, at COMMIT (PostgreSQL's NOTIFY); False where the database cannot
        (SQLite: the caller tells its own process's channels)."""
        ...


class InboxSignal(Protocol):
    """Told that entries may have been committed, so open live channels look (the hub)."""

    def committed(self) -> None:
        """New entries may be visible now. Safe to call from any thread, and cheap."""
        ...

    def changed(self, account_id: str, change: InboxChange) -> None:
        """Entries of the account were read or dismissed (committed). Any thread."""
        ...
