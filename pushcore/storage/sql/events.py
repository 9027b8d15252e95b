"""Event webhooks: the endpoints, the events (the outbox and event log), their attempts."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from pushcore.domain.events import Attempt, AttemptStatus, Event, WebhookEndpoint
from pushcore.storage.sql.accounts import Repository
from pushcore.storage.sql.rows import Codec, Table

# Subscriptions hold no space: one text column, space-separated.
_SUBSCRIPTIONS = Codec("text", "' '.join({})", "tuple({}.split())")
ENDPOINTS = Table("webhook_endpoints", WebhookEndpoint, codecs={"events": _SUBSCRIPTIONS})
_ATTEMPT = (
    "endpoint_id, event_id, type, status, attempts, created_at, next_attempt_at,"
    " attempted_at, response_status, duration_ms"
)
_EVENT = "id, account_id, type, created_at, data, notification_id"


def _data_encoder() -> Callable[[Any], str]:
    """The events' data to compact JSON, as ``json.dumps(data, separators=(",", ":"))``.

    The C encoder made once: ``JSONEncoder.encode`` makes a new one per call (in
    ``iterencode``), which was most of an event's encoding and a seventh of the engine's
    Python work per event, inside its record transaction (docs/benchmarks.md). The
    data is a fresh dict of plain values, never circular: no markers."""
    make = getattr(json.encoder, "c_make_encoder", None)  # not in the typing stubs
    if make is None:  # an interpreter without the C accelerator
        return json.JSONEncoder(separators=(",", ":")).encode
    unknown = json.JSONEncoder().default  # its TypeError for a value JSON has no form of
    encode = make(None, unknown, json.encoder.encode_basestring_ascii, None, ":", ",",
                  False, False, True)  # fmt: skip
    return lambda data: "".join(encode(data, 0))


_encode = _data_encoder()
_EVENT_KINDS = (
    ("id", "text"), ("account_id", "text"), ("type", "text"), ("created_at", "time"),
    ("data", "text"), ("notification_id", "text"),
)  # fmt: skip
_ATTEMPT_KINDS = (
    ("endpoint_id", "text"), ("event_id", "text"), ("account_id", "text"), ("type", "text"),
    ("created_at", "time"), ("next_attempt_at", "time"),
)  # fmt: skip
_PENDING = (("status", "'pending'"), ("attempts", "0"))  # a new attempt's
# Rows in one INSERT at most: 256 x 6 parameters, far under SQLite's 32,766 and
# PostgreSQL's 65,535, and one roll-up chunk's events (128) in one statement.
_ROWS = 256
_RECORD = (
    "UPDATE webhook_attempts SET status = ?, attempts = ?, next_attempt_at = ?,"
    " attempted_at = ?, response_status = ?, duration_ms = ?, lease_owner = NULL,"
    " lease_until = NULL WHERE endpoint_id = ? AND event_id = ? AND lease_owner = ?"
)


class Webhooks(Repository):
    def add(self, endpoint: WebhookEndpoint) -> None:
        """Insert a new endpoint."""
        self._sql.insert_new(
            ENDPOINTS.insert, ENDPOINTS.codec(self._dialect).encode(endpoint), endpoint.id
        )

    def get(self, account_id: str, endpoint_id: str) -> WebhookEndpoint | None:
        """The account's endpoint with this id, or None."""
        where = "id = ? AND account_id = ?"
        rows = self._sql.select(
            ENDPOINTS.columns, "webhook_endpoints", where, endpoint_id, account_id
        )
        return ENDPOINTS.codec(self._dialect).decode(rows[0]) if rows else None

    def by_ids(self, endpoint_ids: Sequence[str]) -> list[WebhookEndpoint]:
        """These endpoints (those that still exist)."""
        rows = self._sql.select(
            ENDPOINTS.columns, "webhook_endpoints", "id = ANY(?)", self._dialect.array(endpoint_ids)
        )
        decode = ENDPOINTS.codec(self._dialect).decode
        return [decode(r) for r in rows]

    def list(self, account_id: str, *, enabled_only: bool = False) -> list[WebhookEndpoint]:
        """The account's endpoints, oldest first."""
        where = "account_id = ?" + (" AND enabled" if enabled_only else "") + " ORDER BY id"
        rows = self._sql.select(ENDPOINTS.columns, "webhook_endpoints", where, account_id)
        decode = ENDPOINTS.codec(self._dialect).decode
        return [decode(r) for r in rows]

    def count(self, account_id: str) -> int:
        """How many endpoints the account has."""
        (n,) = self._sql.one(
            "SELECT COUNT(*) FROM webhook_endpoints WHERE account_id = ?", (account_id,)
        )
        return int(n)

    def any(self) -> bool:
        """Whether any account has an endpoint."""
        return bool(self._sql.all("SELECT 1 FROM webhook_endpoints LIMIT 1"))

    def update(self, endpoint: WebhookEndpoint) -> None:
        """Store the endpoint's changed state."""
        self._sql.run(
            "UPDATE webhook_endpoints SET url = :url, events = :events,"
            " description = :description, enabled = :enabled, secret = :secret,"
            " disabled_reason = :disabled_reason, old_secret = :old_secret,"
            " old_secret_until = :old_secret_until WHERE id = :id",
            ENDPOINTS.codec(self._dialect).params(endpoint),
        )

    def disable(self, endpoint_id: str, reason: str) -> None:
        """Stop sending to the endpoint; its pending attempts fail."""
        self._sql.run(
            "UPDATE webhook_endpoints SET enabled = ?, disabled_reason = ? WHERE id = ?",
            (False, reason, endpoint_id),
        )
        self._sql.run(
            "UPDATE webhook_attempts SET status = 'failed', next_attempt_at = NULL,"
            " lease_owner = NULL, lease_until = NULL WHERE endpoint_id = ? AND status = 'pending'",
            (endpoint_id,),
        )

    def remove(self, account_id: str, endpoint_id: str) -> bool:
        """Delete the endpoint and its attempts; whether it existed."""
        self._sql.run("DELETE FROM webhook_attempts WHERE endpoint_id = ?", (endpoint_id,))
        cursor = self._sql.run(
            "DELETE FROM webhook_endpoints WHERE id = ? AND account_id = ?",
            (endpoint_id, account_id),
        )
        return bool(cursor.rowcount)


def _attempt(dialect: Any, row: Sequence[Any]) -> Attempt:
    opt = dialect.opt_read_time
    return Attempt(
        endpoint_id=row[0],
        event_id=row[1],
        type=row[2],
        status=AttemptStatus(row[3]),
        attempts=int(row[4]),
        created_at=dialect.read_time(row[5]),
        next_attempt_at=opt(row[6]),
        attempted_at=opt(row[7]),
        response_status=row[8],
        duration_ms=row[9],
    )


class Events(Repository):
    def add(self, events: Sequence[tuple[Event, Sequence[str]]], due: datetime) -> None:
        """Insert each event and a pending attempt, due at ``due``, per endpoint beside it."""
        # The engine's roll-up writes up to 128 events at once, all of one time: that
        # time encoded once, and each table's rows in one INSERT (an executemany cost
        # a bind, a step and a reset per row on SQLite, a message each on PostgreSQL).
        time = self._dialect.time
        times: dict[datetime, Any] = {due: time(due)}

        def encoded(at: datetime) -> Any:
            value = times.get(at)
            if value is None:
                value = times[at] = time(at)
            return value

        rows = []
        attempts = []
        for event, endpoint_ids in events:
            data = event.data
            created = encoded(event.created_at)
            rows.append(
                (
                    event.id,
                    event.account_id,
                    event.type,
                    created,
                    _encode(data if isinstance(data, dict) else dict(data)),
                    event.notification_id,
                )
            )
            attempts += [
                (e, event.id, event.account_id, event.type, created, times[due])
                for e in endpoint_ids
            ]
        self._insert("events", _EVENT_KINDS, rows)
        self._insert("webhook_attempts", _ATTEMPT_KINDS, attempts, _PENDING)

    def _insert(
        self,
        table: str,
        kinds: Sequence[tuple[str, str]],
        rows: Sequence[tuple[Any, ...]],
        fixed: Sequence[tuple[str, str]] = (),
    ) -> None:
        """Insert ``rows`` (values of the columns ``kinds`` names) into ``table`` in one
        statement; ``fixed``: more columns and their SQL literal, alike for every row."""
        if not rows:
            return
        columns = ", ".join([name for name, _ in kinds] + [name for name, _ in fixed])
        extra = "".join(f", {value}" for _, value in fixed)
        dialect = self._dialect
        if not dialect.executemany_is_bulk:
            # PostgreSQL: the rows as one parameter (Dialect.table: one query text,
            # parsed and planned once; a VALUES list's text grows with its rows, and
            # psycopg parses a long one again every time).
            self._sql.run(
                f"INSERT INTO {table} ({columns}) SELECT *{extra} FROM {dialect.table(kinds)}",  # noqa: S608
                dialect.table_params(rows),
            )
            return
        # SQLite: a VALUES list, up to _ROWS rows a statement (one step inserts them).
        one = "(" + ", ".join("?" * len(kinds)) + extra + ")"
        for start in range(0, len(rows), _ROWS):
            part = rows[start : start + _ROWS]
            self._sql.run(
                f"INSERT INTO {table} ({columns}) VALUES " + ", ".join([one] * len(part)),  # noqa: S608
                [v for row in part for v in row],
            )

    def _decode(self, row: Sequence[Any]) -> Event:
        return Event(
            id=row[0],
            account_id=row[1],
            type=row[2],
            created_at=self._dialect.read_time(row[3]),
            data=json.loads(row[4]),
            notification_id=row[5],
        )

    def by_ids(self, event_ids: Sequence[str]) -> list[Event]:
        """These events (those still kept)."""
        rows = self._sql.select(_EVENT, "events", "id = ANY(?)", self._dialect.array(event_ids))
        return [self._decode(r) for r in rows]

    def page(
        self, account_id: str, after: str | None, types: Sequence[str], limit: int
    ) -> list[Event]:
        """The account's events after ``after`` (an event id), oldest first; ``types``
        (exact types) narrows them."""
        where, params = "account_id = ?", [account_id]
        if after:
            where += " AND id > ?"
            params.append(after)
        if types:
            where += " AND type = ANY(?)"
            params.append(self._dialect.array(types))
        rows = self._sql.select(_EVENT, "events", where + " ORDER BY id LIMIT ?", *params, limit)
        return [self._decode(r) for r in rows]

    def attempts(self, endpoint_id: str, before: str | None, limit: int) -> list[Attempt]:
        """The endpoint's attempts, newest event first, before the event id ``before``."""
        where, params = "endpoint_id = ?", [endpoint_id]
        if before is not None:
            where += " AND event_id < ?"
            params.append(before)
        rows = self._sql.select(
            _ATTEMPT, "webhook_attempts", where + " ORDER BY event_id DESC LIMIT ?", *params, limit
        )
        return [_attempt(self._dialect, r) for r in rows]

    def claim(
        self,
        now: datetime,
        owner: str,
        lease_until: datetime,
        limit: int,
        per_endpoint: int,
        busy: Sequence[str],
    ) -> list[Attempt]:
        """See :class:`pushcore.ports.events.EventRepository`."""
        time = self._dialect.time
        # SKIP LOCKED: another sender's claim in progress is passed over, never
        # waited for or taken twice. The window keeps one endpoint's backlog from
        # filling a claim (PostgreSQL takes no FOR UPDATE beside a window: the
        # rows are locked inside, numbered outside).
        rows = self._sql.all(
            "UPDATE webhook_attempts SET lease_owner = ?, lease_until = ?"  # noqa: S608
            " WHERE (endpoint_id, event_id) IN (SELECT endpoint_id, event_id FROM"
            " (SELECT endpoint_id, event_id, ROW_NUMBER() OVER (PARTITION BY endpoint_id"
            " ORDER BY next_attempt_at, event_id) AS turn FROM (SELECT endpoint_id, event_id,"
            " next_attempt_at FROM webhook_attempts WHERE status = 'pending'"
            " AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until <= ?)"
            " AND NOT (endpoint_id = ANY(?)) AND endpoint_id IN (SELECT id FROM"
            " webhook_endpoints WHERE enabled) ORDER BY next_attempt_at, event_id LIMIT ?"
            + self._sql.lock("FOR UPDATE SKIP LOCKED")
            + ") AS due) AS numbered WHERE turn <= ?)"
            f" RETURNING {_ATTEMPT}",
            (
                owner,
                time(lease_until),
                time(now),
                time(now),
                self._dialect.array(busy),
                limit,
                per_endpoint,
            ),
        )
        return [_attempt(self._dialect, r) for r in rows]

    def record(self, attempt: Attempt, owner: str) -> bool:
        """Store an attempt's latest try and its next due time; False if not ours any more."""
        return bool(self._sql.run(_RECORD, self._recorded(attempt, owner)).rowcount)

    def record_many(self, attempts: Sequence[Attempt], owner: str) -> None:
        """:meth:`record` for each, in one statement (those no longer ours are left)."""
        self._sql.many(_RECORD, [self._recorded(a, owner) for a in attempts])

    def _recorded(self, attempt: Attempt, owner: str) -> tuple[Any, ...]:
        opt = self._dialect.opt_time
        return (
            attempt.status.value,
            attempt.attempts,
            opt(attempt.next_attempt_at),
            opt(attempt.attempted_at),
            attempt.response_status,
            attempt.duration_ms,
            attempt.endpoint_id,
            attempt.event_id,
            owner,
        )

    def first_attempt_at(self, endpoint_id: str, event_id: str) -> datetime | None:
        """When the event was first made due to this endpoint."""
        rows = self._sql.select(
            "created_at", "webhook_attempts", "endpoint_id = ? AND event_id = ?",
            endpoint_id, event_id,
        )  # fmt: skip
        return self._dialect.read_time(rows[0][0]) if rows else None

    def next_due_at(self) -> datetime | None:
        """The earliest pending attempt's due time, or None."""
        (value,) = self._sql.one(
            "SELECT MIN(next_attempt_at) FROM webhook_attempts WHERE status = 'pending'"
        )
        return self._dialect.opt_read_time(value)

    def delete_before(self, before: datetime, limit: int) -> int:
        """Delete up to ``limit`` events made before ``before`` with their attempts."""
        rows = self._sql.all(
            "SELECT id FROM events WHERE created_at < ? ORDER BY created_at LIMIT ?"  # noqa: S608
            + self._sql.lock("FOR UPDATE SKIP LOCKED"),
            (self._dialect.time(before), limit),
        )
        if not rows:
            return 0
        ids = self._dialect.array([r[0] for r in rows])
        self._sql.run("DELETE FROM webhook_attempts WHERE event_id = ANY(?)", (ids,))
        return int(self._sql.run("DELETE FROM events WHERE id = ANY(?)", (ids,)).rowcount)
