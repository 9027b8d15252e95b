"""A replacement's inbox entries take the place of the older ones with its collapse key.

API.md, "After sending": a newer notification of an account with the same
collapse key makes a new entry (``replaces``: the old entry's id) and removes
the old one; with ``renotify: false`` an entry that was read stays read, and a
person who dismissed the old entry gets no new one. The old entry keeps its
row, dismissed and marked replaced, so no later delivery of the old
notification brings it back. Run in the transaction that wrote the new
entries, after them: the live channels see the new entry, and its
``replaces``, together at COMMIT.
"""

from __future__ import annotations

from datetime import datetime

from pushcore.domain.model import Notification
from pushcore.storage.sql.dialect import Sql

# The accounts a stream send ``:o`` reached: those with its entry. A local-time send's
# subscribers still waiting for their time have no entry yet, only deliveries.
_REACHED = "SELECT account_id FROM inbox WHERE notification_id = :o"
_WAITING = (
    " UNION SELECT dv.account_id FROM deliveries AS w JOIN devices AS dv"
    " ON dv.id = w.device_id WHERE w.notification_id = :o"
)


def audience(waiting: bool) -> str:
    """A subquery of the accounts the stream send ``:o`` was sent to (with ``waiting``,
    those of a local-time send whose time has not come too)."""
    return _REACHED + _WAITING if waiting else _REACHED


# An older entry still in the inbox: neither dismissed nor replaced.
SHOWN = "o.dismissed_at IS NULL AND o.replaced_at IS NULL"
# A stream send's entries, once a replacement's took their place (Inbox.fan_out_again).
RETIRE_ORIGINAL = (
    "UPDATE inbox SET dismissed_at = :at, replaced_at = :at"
    " WHERE notification_id = :o AND dismissed_at IS NULL AND replaced_at IS NULL"
)

# Each recipient's entries of the sender's older notifications with the key, newest
# last. A recipient is whoever has an entry of the new notification not yet in an older
# one's place (Inbox.fan_out_again writes most of a replacement's in place).
_OLDER = (
    "SELECT o.account_id, o.public_id, o.read_at, o.dismissed_at, o.replaced_at"
    " FROM inbox AS o JOIN notifications AS p ON p.id = o.notification_id"
    " WHERE p.account_id = ? AND (p.collapse_key = ? OR p.id = ?) AND p.id <> ?"
    " AND p.created_at <= ?"
    " AND o.account_id IN"
    " (SELECT account_id FROM inbox WHERE notification_id = ? AND replaces IS NULL)"
    " ORDER BY o.seq"
)
_RETIRE = (
    "UPDATE inbox SET dismissed_at = ?, replaced_at = ?"
    " WHERE account_id = ? AND public_id = ? AND dismissed_at IS NULL"
)
# Only an entry not yet settled by an earlier claim of the same notification.
_TAKE_PLACE = (
    "UPDATE inbox SET replaces = ?, read_at = ?"
    " WHERE notification_id = ? AND account_id = ? AND replaces IS NULL"
    " AND dismissed_at IS NULL"
)
_HIDE = (
    "UPDATE inbox SET dismissed_at = ?"
    " WHERE notification_id = ? AND account_id = ? AND dismissed_at IS NULL"
)


def replace_older(sql: Sql, notification: Notification, now: datetime) -> int:
    """Let ``notification``'s entries replace its recipients' older entries with its
    collapse key; how many older entries left the inbox."""
    key = notification.collapse_key
    if key is None:
        return 0
    dialect = sql.dialect
    at = dialect.time(now)
    rows = sql.all(
        _OLDER,
        (
            notification.account_id,
            key,
            key,  # a /replace of a notification without a key names it by its id
            notification.id,
            dialect.time(notification.created_at),
            notification.id,
        ),
    )
    latest = {row[0]: row for row in rows}  # ordered by seq: the last one wins
    retire: list[tuple[object, ...]] = []
    take_place: list[tuple[object, ...]] = []
    hide: list[tuple[object, ...]] = []
    for account_id, public_id, read_at, dismissed_at, replaced_at in latest.values():
        if replaced_at is not None:
            continue  # replaced already, by this notification or a newer one
        if dismissed_at is not None:
            # The person dismissed it: a quiet replacement does not bring it back.
            if not notification.renotify:
                hide.append((at, notification.id, account_id))
            continue
        retire.append((at, at, account_id, public_id))
        kept_read = read_at if not notification.renotify else None
        take_place.append((public_id, kept_read, notification.id, account_id))
    if retire:
        sql.many(_RETIRE, retire)
        sql.many(_TAKE_PLACE, take_place)
    if hide:
        sql.many(_HIDE, hide)
    return len(retire)
