"""Recurring schedules, and the occurrence key that makes each occurrence one notification."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from datetime import datetime

from pushcore.domain.recurring import Schedule
from pushcore.domain.schedules import ScheduleState
from pushcore.storage.sql.accounts import Repository
from pushcore.storage.sql.dialect import Dialect
from pushcore.storage.sql.rows import Codec, Table

# A schedule's wall times (naive) and its template are text: ISO and JSON.
_WALL = Codec("text", "{}.isoformat()", "_wall({})", {"_wall": datetime.fromisoformat})
SCHEDULES = Table(
    "schedules",
    Schedule,
    codecs={
        "start": _WALL,
        "anchor": _WALL,
        "exdates": Codec(
            "text",
            "_dumps([d.isoformat() for d in {}])",
            "tuple(_wall(d) for d in _loads({}))",
            {"_dumps": json.dumps, "_loads": json.loads, "_wall": datetime.fromisoformat},
        ),
        "template": Codec(
            "text", "_dumps({})", "_loads({})", {"_dumps": json.dumps, "_loads": json.loads}
        ),
    },
)


# One statement: PostgreSQL makes a concurrent INSERT of the same key wait for the
# first one's commit and then skip it, so of several engines exactly one gets a row.
_CLAIM = (
    "INSERT INTO schedule_occurrences (schedule_id, occurrence_at, notification_id, created_at)"
    " VALUES (?, ?, ?, ?) ON CONFLICT (schedule_id, occurrence_at) DO NOTHING RETURNING 1"
)

# What a materialiser pass changes of a schedule: its position, counters and state.
STEP = SCHEDULES.part(
    "state",
    "next_occurrence_at",
    "last_occurrence_at",
    "sent",
    "missed",
    "anchor",
    "anchor_before",
    "id",
)
_STEP_SET = ", ".join(f"{c} = ?" for c in STEP.names[:-1])
_STEP_SET_FROM_V = ", ".join(f"{c} = v.{c}" for c in STEP.names[:-1])
_OCCURRENCE = (("schedule_id", "text"), ("occurrence_at", "time"), ("notification_id", "text"))


@functools.cache
def _claim_many_sql(dialect: Dialect) -> str:
    # The same key as _CLAIM, for a whole batch; in key order, so two engines' batches
    # (disjoint already: the schedules are locked) never wait on each other crosswise.
    # WHERE TRUE: SQLite's grammar needs it before ON CONFLICT after a SELECT.
    table = dialect.table(_OCCURRENCE)
    return (
        "INSERT INTO schedule_occurrences"  # noqa: S608 (our names only)
        " (schedule_id, occurrence_at, notification_id, created_at)"
        f" SELECT schedule_id, occurrence_at, notification_id, ? FROM {table}"
        " WHERE TRUE ORDER BY schedule_id, occurrence_at"
        " ON CONFLICT (schedule_id, occurrence_at) DO NOTHING RETURNING notification_id"
    )


class Occurrences(Repository):
    def claim(
        self, schedule_id: str, occurrence_at: datetime, notification_id: str, at: datetime
    ) -> bool:
        """See :class:`pushcore.ports.OccurrenceRepository`."""
        time = self._dialect.time
        params = (schedule_id, time(occurrence_at), notification_id, time(at))
        return bool(self._sql.all(_CLAIM, params))

    def claim_many(self, claims: Sequence[tuple[str, datetime, str]], at: datetime) -> set[str]:
        """See :class:`pushcore.ports.OccurrenceRepository`."""
        if not claims:
            return set()
        dialect, time = self._dialect, self._dialect.time
        rows = [
            (schedule_id, time(o), notification_id) for schedule_id, o, notification_id in claims
        ]
        won = self._sql.all(_claim_many_sql(dialect), [time(at), *dialect.table_params(rows)])
        return {str(r[0]) for r in won}

    def notification_of(self, schedule_id: str, occurrence_at: datetime) -> str | None:
        """See :class:`pushcore.ports.OccurrenceRepository`."""
        where = "schedule_id = ? AND occurrence_at = ?"
        found = self._sql.select(
            "notification_id",
            "schedule_occurrences",
            where,
            schedule_id,
            self._dialect.time(occurrence_at),
        )
        return str(found[0][0]) if found else None


class Schedules(Repository):
    def add(self, schedule: Schedule) -> None:
        """Insert a new schedule."""
        self._sql.run(SCHEDULES.insert, SCHEDULES.codec(self._dialect).encode(schedule))

    def get(self, account_id: str, schedule_id: str, for_update: bool = False) -> Schedule | None:
        """The account's schedule, or None; ``for_update`` locks it until the transaction ends."""
        lock = self._sql.lock("FOR UPDATE") if for_update else ""
        rows = self._sql.all(
            f"SELECT {SCHEDULES.columns} FROM schedules WHERE id = ? AND account_id = ?{lock}",  # noqa: S608
            (schedule_id, account_id),
        )
        return SCHEDULES.codec(self._dialect).decode(rows[0]) if rows else None

    def list(
        self, account_id: str, state: ScheduleState | None, limit: int, before_id: str | None
    ) -> Sequence[Schedule]:
        """The account's schedules, newest first, in ``state`` when given, before ``before_id``."""
        where, params = "account_id = ?", [account_id]
        if state is not None:
            where, params = where + " AND state = ?", [*params, state.value]
        if before_id is not None:
            where, params = where + " AND id < ?", [*params, before_id]
        rows = self._sql.all(
            f"SELECT {SCHEDULES.columns} FROM schedules WHERE {where}"  # noqa: S608
            " ORDER BY id DESC LIMIT ?",
            (*params, limit),
        )
        decode = SCHEDULES.codec(self._dialect).decode
        return [decode(r) for r in rows]

    def count_open(self, account_id: str) -> int:
        """How many of the account's schedules are not COMPLETED (the free plan's limit)."""
        (count,) = self._sql.one(
            "SELECT COUNT(*) FROM schedules WHERE account_id = ? AND state <> 'COMPLETED'",
            (account_id,),
        )
        return int(count)

    def update(self, schedule: Schedule) -> None:
        """Store a changed schedule (every column but its id)."""
        codec = SCHEDULES.codec(self._dialect)
        values = dict(zip(SCHEDULES.names, codec.encode(schedule), strict=True))
        names = [n for n in SCHEDULES.names if n != "id"]
        sets = ", ".join(f"{n} = ?" for n in names)
        self._sql.run(
            f"UPDATE schedules SET {sets} WHERE id = ?",  # noqa: S608 (our column names)
            (*(values[n] for n in names), schedule.id),
        )

    def update_steps(self, schedules: Sequence[Schedule]) -> None:
        """Store what a materialiser pass changed of each schedule, in one statement."""
        if not schedules:
            return
        dialect = self._dialect
        encode = STEP.codec(dialect).encode
        rows = [encode(s) for s in schedules]
        if dialect.executemany_is_bulk:
            self._sql.many(f"UPDATE schedules SET {_STEP_SET} WHERE id = ?", rows)  # noqa: S608
            return
        self._sql.run(
            f"UPDATE schedules SET {_STEP_SET_FROM_V} FROM {dialect.table(STEP.kinds)}"  # noqa: S608
            " WHERE schedules.id = v.id",
            dialect.table_params(rows),
        )

    def delete(self, account_id: str, schedule_id: str) -> bool:
        """Remove the schedule; False if the account has none by this id."""
        cursor = self._sql.run(
            "DELETE FROM schedules WHERE id = ? AND account_id = ?", (schedule_id, account_id)
        )
        return bool(cursor.rowcount)

    def due(self, until: datetime, streams_until: datetime, limit: int) -> Sequence[Schedule]:
        """ACTIVE schedules whose next occurrence is by ``until`` (``streams_until`` for a
        stream send's), earliest first.

        Locked, skipping what another engine holds: two engines never plan the
        same schedule at once (the occurrence key would still stop a repeat).
        """
        lock = self._sql.lock("FOR UPDATE SKIP LOCKED")
        rows = self._sql.all(
            f"SELECT {SCHEDULES.columns} FROM schedules WHERE state = 'ACTIVE'"  # noqa: S608
            " AND next_occurrence_at <= ? AND (stream_id IS NULL OR next_occurrence_at <= ?)"
            f" ORDER BY next_occurrence_at LIMIT ?{lock}",
            (self._dialect.time(until), self._dialect.time(streams_until), limit),
        )
        decode = SCHEDULES.codec(self._dialect).decode
        return [decode(r) for r in rows]

    def earliest(self) -> datetime | None:
        """The earliest next occurrence of any ACTIVE schedule."""
        (value,) = self._sql.one(
            "SELECT MIN(next_occurrence_at) FROM schedules WHERE state = 'ACTIVE'"
        )
        return self._dialect.opt_read_time(value)

    def pending_notifications(self, schedule_id: str) -> Sequence[str]:
        """The schedule's notifications still waiting (QUEUED or SCHEDULED)."""
        rows = self._sql.select(
            "id",
            "notifications",
            "schedule_id = ? AND status IN ('QUEUED', 'SCHEDULED') ORDER BY id",
            schedule_id,
        )
        return [str(r[0]) for r in rows]
