"""The few ways SQLite and PostgreSQL differ, so that the repositories' SQL is written once.

Repositories write one SQL text: ``?`` and ``:name`` placeholders, a list
parameter as ``= ANY(?)`` (bound with :meth:`Dialect.array`), row locks as
PostgreSQL's ``FOR ...`` clauses, SQLite's index pins as ``INDEXED BY``.
Each dialect turns that text into its own once per statement (cached), and
says how its database holds a time, a list of scopes and a JSON object: the
:class:`~pushcore.storage.sql.rows.Primitives` from which each table's rows
are made (``sql/rows.py``, ``storage/records.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime
from typing import Any, TypeVar, cast

from pushcore.domain.errors import Unavailable
from pushcore.storage.sql.nulls import inline_nulls
from pushcore.storage.sql.tally import Tally

T = TypeVar("T")

# A derived table's column types, the kinds of sql/rows.py's codecs.
ColumnType = str  # "text", "int", "bool", "time" or "json"
Params = Sequence[object] | Mapping[str, object]


class Dialect:
    """How one database spells the repositories' SQL, and holds times, lists and JSON.

    A value goes to the database as the driver takes it: strings, integers and
    booleans as they are (SQLite stores a boolean as 0 or 1, and ``bool()``
    reads either back); the methods below convert the others.
    """

    # Whether writers run at once and must lock what they decide on
    # (PostgreSQL); False for SQLite, whose single writer excludes the others.
    row_locks: bool
    # The statement that takes a transaction-scoped advisory lock on
    # (namespace, key), or None where there is nothing to lock.
    advisory_lock: str | None
    # Whether executemany() is the quickest way to run one statement for many
    # rows (SQLite: in process, one prepared statement); else (PostgreSQL: a
    # round trip each) the repositories use one statement over :meth:`table`.
    executemany_is_bulk: bool
    # Whether each row a statement gives back is a step of its own in which the
    # driver lets go of the interpreter (SQLite's). A thread reading thousands of rows
    # then waits for a busy event loop's thread thousands of times: a claim of 2,500
    # took 0.65-18 s beside a thread running Python, against 18 ms alone, and 80-92 ms
    # as one JSON value (20 ms alone; docs/benchmarks.md, "Local-time sends"). Where
    # True, :meth:`Sql.changed` asks for such rows as one JSON value.
    steps_per_row: bool = False
    # Whether a bound NULL costs the driver more than one written in the statement
    # (Python's sqlite3): bulk INSERTs then write the columns NULL in every row as NULL
    # (sql/nulls.py).
    inlines_nulls: bool = False
    # The statement that tells listeners, at COMMIT, of inbox entries written or
    # changed (PostgreSQL's NOTIFY, its one parameter the payload), or None where
    # readers look by themselves.
    inbox_notify: str | None
    # An expression for 80 random bits as 20 lowercase hex digits, drawn per row: the
    # tail of an inbox entry's public id (pushcore/domain/inbox.py).
    id_tail: str
    # The table of applied migrations, and the time one was applied at.
    migrations_table: str
    now: str

    def __init__(self) -> None:
        self._native: dict[str, str] = {}

    def time(self, at: datetime) -> Any:
        """A time as the database holds it; ValueError for a naive time."""
        raise NotImplementedError

    def read_time(self, value: Any) -> datetime:
        """A time as the database gave it, back as an aware datetime."""
        raise NotImplementedError

    def time_ceil(self, at: datetime) -> Any:
        """A time as the database holds it, rounded up where it holds less precision:
        ``stored < time_ceil(t)`` exactly when the stored time is before ``t``."""
        return self.time(at)

    def opt_time(self, at: datetime | None) -> Any:
        """:meth:`time`, or None."""
        return None if at is None else self.time(at)

    def opt_read_time(self, value: Any) -> datetime | None:
        """:meth:`read_time`, or None."""
        return None if value is None else self.read_time(value)

    def scopes(self, values: list[str]) -> Any:
        """A key's scope values, in their order, as the database holds them."""
        raise NotImplementedError

    def read_scopes(self, value: Any) -> list[str]:
        """A key's scope values as the database gave them."""
        raise NotImplementedError

    def json(self, value: Mapping[str, str]) -> Any:
        """A JSON object of strings (a notification's metadata) as the database holds it."""
        raise NotImplementedError

    def read_json(self, value: Any) -> Mapping[str, str]:
        """A JSON object as the database gave it."""
        raise NotImplementedError

    def sql(self, text: str) -> str:
        """``text`` in this database's own SQL (translated once, then cached)."""
        native = self._native.get(text)
        if native is None:
            native = self._native[text] = self.translate(text)
        return native

    def translate(self, text: str) -> str:
        """The translation :meth:`sql` caches."""
        raise NotImplementedError

    def array(self, values: Sequence[str]) -> Any:
        """A list of strings as the parameter of ``= ANY(?)`` and :meth:`list_table`."""
        raise NotImplementedError

    def int_array(self, values: Sequence[int]) -> Any:
        """A list of integers as the parameter of ``= ANY(?)``."""
        raise NotImplementedError

    def list_table(self, alias: str) -> str:
        """A table ``alias`` with one column ``value``, from one :meth:`array` parameter."""
        raise NotImplementedError

    def table(self, columns: Sequence[tuple[str, ColumnType]]) -> str:
        """A derived table ``v`` of these columns, from :meth:`table_params`."""
        raise NotImplementedError

    def table_params(self, rows: Sequence[Sequence[object]]) -> list[Any]:
        """The parameters of :meth:`table`, from rows of values in its column order."""
        raise NotImplementedError

    def run_script(self, conn: Any, script: str) -> None:
        """Run a migration's statements, in the caller's transaction."""
        raise NotImplementedError

    def duplicate_as_key_error(self, conn: Any, key: str) -> AbstractContextManager[None]:
        """Turn a uniqueness violation of the block into KeyError(key), the transaction
        still usable afterwards."""
        raise NotImplementedError

    def unavailable(self, error: Exception) -> Unavailable | None:
        """The Unavailable a driver error means (the database unreachable, not answering
        in time, locked, full), or None for any other error (a bug, a constraint)."""
        raise NotImplementedError

    @contextmanager
    def outages(self) -> Iterator[None]:
        """The block's driver errors that mean an outage, raised as Unavailable.

        The one place where those errors are translated: the stores wrap each
        transaction in it, and savepoints too (a group commit's work hears of
        its own failure), so services and adapters see only the domain error.
        """
        try:
            yield
        except Exception as exc:
            unavailable = self.unavailable(exc)
            if unavailable is None:
                raise
            raise unavailable from exc


class Sql:
    """One transaction's connection, spoken to in the repositories' SQL."""

    def __init__(self, conn: Any, dialect: Dialect, writing: bool) -> None:
        self.conn = conn
        self.dialect = dialect
        # Lock intents only mean something to a writer that may meet another.
        self.locking = writing and dialect.row_locks
        # What the transaction changed in the accounts' counts, applied at commit.
        self.tally = Tally()
        # Statements that wrote, or failed (a failed one may spoil the transaction):
        # a group commit undoes a work without a savepoint only if it made none.
        self.changes = 0
        # In a group commit (Transaction.grouped): inserts held to be sent together,
        # by the function that sends them, and what the works read of devices.
        self.held: dict[Callable[[list[Any]], None], list[Any]] | None = None
        self.seen: dict[tuple[str | None, ...], Any] = {}
        # True while the held inserts are sent (send_held).
        self.sending_held = False

    def run(self, text: str, params: Params = ()) -> Any:
        """Execute ``text``; the cursor."""
        if self.held:
            # Every statement sees the inserts held before it.
            self.send_held()
        if not text.startswith("SELECT"):
            self.changes += 1
            if self.held is not None:
                self.seen.clear()  # it may have changed what was read
        try:
            return self.conn.execute(self.dialect.sql(text), params)
        except BaseException:
            self.changes += 1
            raise

    def all(self, text: str, params: Params = ()) -> Any:
        """Every row of ``text``, a list of tuples."""
        return self.run(text, params).fetchall()

    def many(self, text: str, rows: Sequence[Params]) -> None:
        """Execute ``text`` once per row (psycopg pipelines them: one round trip)."""
        if self.held:
            self.send_held()
        self.changes += 1
        if self.held is not None:
            self.seen.clear()
        if self.dialect.inlines_nulls:
            text, rows = inline_nulls(text, rows)
        self.conn.cursor().executemany(self.dialect.sql(text), rows)

    def hold(self, send: Callable[[list[Any]], None], items: Sequence[Any]) -> bool:
        """In a group commit, keep ``items`` for one ``send`` of all the group's; whether
        they were kept (else the caller sends them now)."""
        if self.held is None:
            return False
        self.changes += 1
        self.held.setdefault(send, []).extend(items)
        return True

    def send_held(self) -> None:
        """Send the held inserts, each kind in one statement, in the order first held."""
        held, self.held = self.held, None
        # Counted when held: sending them is no new change of the work that runs now,
        # unless it fails (the group then runs again).
        changes = self.changes
        self.sending_held = True
        try:
            for send, items in (held or {}).items():
                send(items)
        except BaseException:
            changes += 1
            raise
        finally:
            self.held, self.changes, self.sending_held = {}, changes, False

    def remember(self, key: tuple[str | None, ...], read: Callable[[], T]) -> T:
        """``read()``, once per group commit while no statement of it wrote."""
        if self.held is None:
            return read()
        if key not in self.seen:
            self.seen[key] = read()
        return cast("T", self.seen[key])

    def changed(
        self,
        change: str,
        where: str,
        returning: str,
        params: Sequence[object] = (),
        where_params: Sequence[object] = (),
        *,
        key: str | None = None,
    ) -> list[Sequence[Any]]:
        """The rows of ``{change} WHERE {where} RETURNING {returning}`` (``change`` an
        UPDATE's or a DELETE's start; ``params`` its own, then ``where_params``).

        Where the driver steps a row at a time (:attr:`Dialect.steps_per_row`), the rows
        come in one step as one JSON array instead: ``returning`` read first where the
        change leaves it as it was (``key`` None), else the changed rows' ``key`` first and
        ``returning`` after the change, by key. The transaction is the database's one
        writer there, so what ``where`` picks cannot move in between."""
        if not self.dialect.steps_per_row:
            return cast(
                "list[Sequence[Any]]",
                self.all(f"{change} WHERE {where} RETURNING {returning}", (*params, *where_params)),
            )
        table = change.split()[2 if change.startswith("DELETE") else 1]
        if key is None:
            (found,) = self.one(
                f"SELECT json_group_array(json_array({returning})) FROM {table}"  # noqa: S608
                f" WHERE {where}",
                where_params,
            )
            rows: list[Sequence[Any]] = json.loads(found)
            if rows:
                self.run(f"{change} WHERE {where}", (*params, *where_params))
            return rows
        (keys,) = self.one(
            f"SELECT json_group_array({key}) FROM {table} WHERE {where}",  # noqa: S608
            where_params,
        )
        if keys == "[]":
            return []
        self.run(f"{change} WHERE {key} = ANY(?)", (*params, keys))
        (found,) = self.one(
            f"SELECT json_group_array(json_array({returning})) FROM {table}"  # noqa: S608
            f" WHERE {key} = ANY(?)",
            (keys,),
        )
        return cast("list[Sequence[Any]]", json.loads(found))

    def one(self, text: str, params: Params = ()) -> Any:
        """The one row of ``text`` (an aggregate's), as a tuple."""
        return self.run(text, params).fetchone()

    def select(self, columns: str, table: str, where: str, *params: object) -> Any:
        """``SELECT columns FROM table WHERE where``."""
        # Only literal names and clauses of the repositories reach the text;
        # every value is a bound parameter.
        return self.all(f"SELECT {columns} FROM {table} WHERE {where}", params)  # noqa: S608

    def lock(self, clause: str) -> str:
        """`` clause`` (a ``FOR ...`` row lock) when this transaction takes locks, else ''."""
        return f" {clause}" if self.locking else ""

    def insert_new(self, text: str, params: Params, key: str) -> None:
        """Run an INSERT; KeyError(key) if a row with one of its unique values exists."""
        # ON CONFLICT DO NOTHING reports a duplicate without failing the
        # statement, so the transaction stays usable without a savepoint;
        # other constraint violations still raise as themselves.
        if self.run(text + " ON CONFLICT DO NOTHING", params).rowcount == 0:
            raise KeyError(key)

    def duplicate_as_key_error(self, key: str) -> AbstractContextManager[None]:
        """See :meth:`Dialect.duplicate_as_key_error`; nothing while the held inserts
        are sent.

        A group commit whose held inserts fail runs again with a savepoint per work
        and nothing held (storage/group.py), where each work hears its own KeyError.
        So the held send needs no savepoint of its own, which on PostgreSQL was two
        round trips (SAVEPOINT, RELEASE) per kind of row in every group; its error
        goes up as the driver raised it, for no work to take as its own KeyError.
        """
        if self.sending_held:
            return nullcontext()
        return self.dialect.duplicate_as_key_error(self.conn, key)
