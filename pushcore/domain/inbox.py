"""The inbox: what reached an account, one entry per notification and recipient.

An entry has two identities. Its position, ``seq``, is a number the database
gives it when it commits, so entries are numbered in the order they became
visible, across processes: a reader that saw entry N has seen every entry
before it, which is what lets the live channel resume without losing or
repeating one. It never leaves the server: it counts every account's entries.

Its public id (``inb_``, then the creation time in milliseconds as 12 hex
digits, then 80 random bits as 20 hex digits, lowercase: 36 characters) sorts
by creation time, as a ULID does, and tells nothing of other accounts. The
database draws the random part as it inserts (a stream send writes thousands
of entries in one statement), and keeps the id unique per account. A client's
id is turned back into its position by a lookup in its own account; an id the
account no longer has (retention) stands for the latest entry created before
it, by the time in the id.
"""

from __future__ import annotations

import re
from datetime import datetime

import attrs

from pushcore.domain.model import Notification

ENTRY_PREFIX = "inb_"
ENTRY_ID = re.compile(r"inb_[0-9a-f]{32}")
_TIME_DIGITS = 12  # 48 bits of milliseconds: until the year 10889
_LEGACY_DIGITS = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_LEGACY_VALUE = {c: i for i, c in enumerate(_LEGACY_DIGITS)}
_LEGACY_WIDTH = 13


def entry_id_prefix(at: datetime) -> str:
    """The part of the ids of entries created at ``at`` before their random tail."""
    millis = int(at.timestamp() * 1000)
    return f"{ENTRY_PREFIX}{millis:0{_TIME_DIGITS}x}"


def is_entry_id(value: str) -> bool:
    """Whether ``value`` has the form of an entry id."""
    return ENTRY_ID.fullmatch(value) is not None


def legacy_entry_seq(value: str) -> int | None:
    """The position an id of before 0016 spelled (``inb_`` and 13 base32 digits), or
    None: such ids are still taken to resume a channel across the upgrade."""
    body = value.removeprefix(ENTRY_PREFIX)
    if len(body) != _LEGACY_WIDTH or len(value) != len(body) + len(ENTRY_PREFIX):
        return None
    seq = 0
    for char in body:
        digit = _LEGACY_VALUE.get(char)
        if digit is None:
            return None
        seq = seq * 32 + digit
    return seq if seq < 2**63 else None


@attrs.frozen
class InboxEntry:
    """A notification in the inbox of one account, and what that account did with it."""

    seq: int
    id: str  # the public id (``inb_...``)
    account_id: str
    notification_id: str
    delivered_at: datetime
    read_at: datetime | None = None
    # Dismissed entries keep their row (until retention) so that a later
    # delivery of the same notification cannot bring them back.
    dismissed_at: datetime | None = None
    # A replacement (same sender and collapse key) names the entry it took the
    # place of; that one keeps its row, marked replaced, so it never comes back.
    replaces: str | None = None
    replaced_at: datetime | None = None


@attrs.frozen
class InboxItem:
    """An entry with its notification (what the API shows)."""

    entry: InboxEntry
    notification: Notification


@attrs.frozen
class InboxPage:
    """A page of an inbox, newest first, and its unread count."""

    items: tuple[InboxItem, ...]
    next_before: str | None  # the id to continue below, when more follow
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


@attrs.frozen
class Withdrawn:
    """Entries taken out of an account's inbox: their notification was withdrawn or expired."""

    ids: tuple[str, ...]


InboxChange = Read | Dismissed | Withdrawn
