"""The inbox: what reached an account, one entry per notification and recipient.

An entry's position is a number the database gives it when it commits
(``seq``), so entries are numbered in the order they became visible, across
processes: a reader that saw entry N has seen every entry before it, which is
what lets the live channel resume by id without losing or repeating one. Its
public id, ``inb_`` and that number in Crockford base32 (13 characters, so
ids sort as their numbers do), is derived from it.
"""

from __future__ import annotations

from datetime import datetime

import attrs

from pushcore.domain.model import Notification

ENTRY_PREFIX = "inb_"
_DIGITS = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_VALUE = {c: i for i, c in enumerate(_DIGITS)}
_WIDTH = 13  # 65 bits: every non-negative 64-bit number


def entry_id(seq: int) -> str:
    """The public id of the entry numbered ``seq``."""
    digits = []
    for _ in range(_WIDTH):
        seq, digit = divmod(seq, 32)
        digits.append(_DIGITS[digit])
    return ENTRY_PREFIX + "".join(reversed(digits))


def entry_seq(value: str) -> int | None:
    """The number of an entry id, or None when ``value`` is not one."""
    body = value.removeprefix(ENTRY_PREFIX)
    if len(body) != _WIDTH or len(value) != len(body) + len(ENTRY_PREFIX):
        return None
    seq = 0
    for char in body:
        digit = _VALUE.get(char)
        if digit is None:
            return None
        seq = seq * 32 + digit
    return seq if seq < 2**63 else None


@attrs.frozen
class InboxEntry:
    """A notification in the inbox of one account, and what that account did with it."""

    seq: int
    account_id: str
    notification_id: str
    delivered_at: datetime
    read_at: datetime | None = None
    # Dismissed entries keep their row (until retention) so that a later
    # delivery of the same notification cannot bring them back.
    dismissed_at: datetime | None = None

    @property
    def id(self) -> str:
        """The public id (``inb_...``)."""
        return entry_id(self.seq)


@attrs.frozen
class InboxItem:
    """An entry with its notification (what the API shows)."""

    entry: InboxEntry
    notification: Notification


@attrs.frozen
class InboxPage:
    """A page of an inbox, newest first, and its unread count."""

    items: tuple[InboxItem, ...]
    next_before: int | None  # the seq to continue below, when more follow
    unread: int


@attrs.frozen
class Read:
    """Entries of an account marked read, and how many are left unread."""

    ids: tuple[str, ...]
    unread: int


@attrs.frozen
class Dismissed:
    """An entry taken out of an account's inbox."""

    id: str


InboxChange = Read | Dismissed
