"""The SQLite store: one file, WAL mode, one connection per thread, versioned migrations."""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path

import attrs

from pushcore.domain.model import Account, ApiKey, Device, Plan, Platform, WebPushKeys
from pushcore.domain.scopes import Scope

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)

# Both mean "this row is already there"; any other constraint failure is a bug
# and must surface as itself, not as a KeyError.
_DUPLICATE = frozenset({"SQLITE_CONSTRAINT_UNIQUE", "SQLITE_CONSTRAINT_PRIMARYKEY"})

_MIGRATION_FILE = re.compile(r"(\d+)_(\w+)\.sql")

_KEY_COLUMNS = (
    "id, account_id, name, key_hash, key_prefix, scopes, expires_at,"
    " is_active, last_used_at, revoked_at, created_at"
)
_DEVICE_COLUMNS = (
    "id, account_id, platform, token, name, keys_p256dh, keys_auth,"
    " is_active, created_at, last_delivered_at"
)


def _to_ms(at: datetime) -> int:
    # A naive datetime would be read as local time and silently shifted.
    if at.utcoffset() is None:
        raise ValueError(f"naive datetime {at!r}: the store needs timezone-aware times")
    return (at - _EPOCH) // _MS


def _to_ms_ceil(at: datetime) -> int:
    # For a whole number n, n < t exactly when n < ceil(t): comparing stored
    # milliseconds with the ceiling keeps a sub-millisecond bound exact.
    floor = _to_ms(at)
    return floor if (at - _EPOCH) % _MS == timedelta(0) else floor + 1


def _from_ms(ms: int) -> datetime:
    return _EPOCH + ms * _MS


def _opt_to_ms(at: datetime | None) -> int | None:
    return None if at is None else _to_ms(at)


def _opt_from_ms(ms: int | None) -> datetime | None:
    return None if ms is None else _from_ms(ms)


@contextmanager
def _duplicate_as_key_error(key: str) -> Iterator[None]:
    """Raise KeyError for a uniqueness violation, as the memory store does."""
    try:
        yield
    except sqlite3.IntegrityError as exc:
        if exc.sqlite_errorname in _DUPLICATE:
            raise KeyError(key) from exc
        raise


def _account(row: sqlite3.Row) -> Account:
    return Account(id=row["id"], plan=Plan(row["plan"]), created_at=_from_ms(row["created_at"]))


def _key_to_row(key: ApiKey) -> dict[str, object]:
    return {
        "id": key.id,
        "account_id": key.account_id,
        "name": key.name,
        "key_hash": key.key_hash,
        "key_prefix": key.key_prefix,
        "scopes": " ".join(s.value for s in key.scopes),
        "expires_at": _opt_to_ms(key.expires_at),
        "is_active": int(key.is_active),
        "last_used_at": _opt_to_ms(key.last_used_at),
        "revoked_at": _opt_to_ms(key.revoked_at),
        "created_at": _to_ms(key.created_at),
    }


def _key_from_row(row: sqlite3.Row) -> ApiKey:
    return ApiKey(
        id=row["id"],
        account_id=row["account_id"],
        name=row["name"],
        key_hash=row["key_hash"],
        key_prefix=row["key_prefix"],
        scopes=tuple(Scope(s) for s in row["scopes"].split()),
        expires_at=_opt_from_ms(row["expires_at"]),
        created_at=_from_ms(row["created_at"]),
        is_active=bool(row["is_active"]),
        last_used_at=_opt_from_ms(row["last_used_at"]),
        revoked_at=_opt_from_ms(row["revoked_at"]),
    )


def _device_to_row(device: Device) -> dict[str, object]:
    keys = device.keys
    return {
        "id": device.id,
        "account_id": device.account_id,
        "platform": device.platform.value,
        "token": device.token,
        "name": device.name,
        "keys_p256dh": None if keys is None else keys.p256dh,
        "keys_auth": None if keys is None else keys.auth,
        "is_active": int(device.is_active),
        "created_at": _to_ms(device.created_at),
        "last_delivered_at": _opt_to_ms(device.last_delivered_at),
    }


def _device_from_row(row: sqlite3.Row) -> Device:
    p256dh, auth = row["keys_p256dh"], row["keys_auth"]
    return Device(
        id=row["id"],
        account_id=row["account_id"],
        platform=Platform(row["platform"]),
        token=row["token"],
        name=row["name"],
        created_at=_from_ms(row["created_at"]),
        keys=None if p256dh is None else WebPushKeys(p256dh=p256dh, auth=auth),
        is_active=bool(row["is_active"]),
        last_delivered_at=_opt_from_ms(row["last_delivered_at"]),
    )


class _Repository:
    """Rows of one table, read through the transaction's connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def _rows(self, columns: str, table: str, where: str, *params: object) -> list[sqlite3.Row]:
        # Only literal names and clauses of this module reach the f-string;
        # every value is a bound parameter.
        sql = f"SELECT {columns} FROM {table} WHERE {where}"  # noqa: S608
        return self._conn.execute(sql, params).fetchall()


class _Accounts(_Repository):
    def get(self, account_id: str) -> Account | None:
        """The account, or None."""
        rows = self._rows("id, plan, created_at", "accounts", "id = ?", account_id)
        return _account(rows[0]) if rows else None

    def ensure(self, account: Account) -> Account:
        """Insert the account unless its id exists; return the stored one."""
        self._conn.execute(
            "INSERT INTO accounts (id, plan, created_at) VALUES (?, ?, ?)"
            " ON CONFLICT (id) DO NOTHING",
            (account.id, account.plan.value, _to_ms(account.created_at)),
        )
        stored = self.get(account.id)
        assert stored is not None  # inserted or already there, in this very transaction
        return stored

    def set_plan(self, account_id: str, plan: Plan, now: datetime) -> Account:
        """Set the plan, creating the account at ``now`` if it does not exist."""
        self._conn.execute(
            "INSERT INTO accounts (id, plan, created_at) VALUES (?, ?, ?)"
            " ON CONFLICT (id) DO UPDATE SET plan = excluded.plan",
            (account_id, plan.value, _to_ms(now)),
        )
        stored = self.get(account_id)
        assert stored is not None  # upserted just above, in this very transaction
        return stored


class _ApiKeys(_Repository):
    def add(self, key: ApiKey) -> None:
        """Insert a new key; KeyError if its id (or hash) is taken."""
        with _duplicate_as_key_error(key.id):
            self._conn.execute(
                "INSERT INTO api_keys (id, account_id, name, key_hash, key_prefix, scopes,"
                " expires_at, is_active, last_used_at, revoked_at, created_at)"
                " VALUES (:id, :account_id, :name, :key_hash, :key_prefix, :scopes,"
                " :expires_at, :is_active, :last_used_at, :revoked_at, :created_at)",
                _key_to_row(key),
            )

    def get(self, account_id: str, key_id: str) -> ApiKey | None:
        """The key with this id in this account, or None."""
        rows = self._rows(_KEY_COLUMNS, "api_keys", "id = ? AND account_id = ?", key_id, account_id)
        return _key_from_row(rows[0]) if rows else None

    def find_by_hash(self, key_hash: str) -> ApiKey | None:
        """The key with this SHA-256 hash, or None."""
        rows = self._rows(_KEY_COLUMNS, "api_keys", "key_hash = ?", key_hash)
        return _key_from_row(rows[0]) if rows else None

    def list(self, account_id: str) -> Sequence[ApiKey]:
        """The account's keys, newest first, revoked ones included."""
        rows = self._rows(_KEY_COLUMNS, "api_keys", "account_id = ? ORDER BY id DESC", account_id)
        return [_key_from_row(row) for row in rows]

    def update(self, key: ApiKey) -> None:
        """Store the key's changed state; a key that no longer exists stays deleted."""
        self._conn.execute(
            "UPDATE api_keys SET name = :name, scopes = :scopes, expires_at = :expires_at,"
            " is_active = :is_active, last_used_at = :last_used_at, revoked_at = :revoked_at"
            " WHERE id = :id",
            _key_to_row(key),
        )

    def touch_last_used(self, key_id: str, at: datetime, older_than: datetime) -> bool:
        """Set last_used_at to ``at`` if unset or before ``older_than``; whether it wrote."""
        # One conditional statement, so no other process's touch can come
        # between the check and the write.
        cursor = self._conn.execute(
            "UPDATE api_keys SET last_used_at = ?"
            " WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)",
            (_to_ms(at), key_id, _to_ms_ceil(older_than)),
        )
        return cursor.rowcount > 0


class _Devices(_Repository):
    def add(self, device: Device) -> None:
        """Insert a new device; KeyError if the account already has its token."""
        with _duplicate_as_key_error(device.token):
            self._conn.execute(
                "INSERT INTO devices (id, account_id, platform, token, name, keys_p256dh,"
                " keys_auth, is_active, created_at, last_delivered_at)"
                " VALUES (:id, :account_id, :platform, :token, :name, :keys_p256dh,"
                " :keys_auth, :is_active, :created_at, :last_delivered_at)",
                _device_to_row(device),
            )

    def update(self, device: Device) -> None:
        """Store a changed device; a device that no longer exists stays deleted."""
        # Not an upsert: a delivery finishing after the user removed the device
        # must not bring the device back.
        with _duplicate_as_key_error(device.token):
            self._conn.execute(
                "UPDATE devices SET platform = :platform, token = :token, name = :name,"
                " keys_p256dh = :keys_p256dh, keys_auth = :keys_auth, is_active = :is_active,"
                " last_delivered_at = :last_delivered_at WHERE id = :id",
                _device_to_row(device),
            )

    def get(self, account_id: str, device_id: str) -> Device | None:
        """The device with this id in this account, or None."""
        where = "id = ? AND account_id = ?"
        rows = self._rows(_DEVICE_COLUMNS, "devices", where, device_id, account_id)
        return _device_from_row(rows[0]) if rows else None

    def find_by_token(self, account_id: str, token: str) -> Device | None:
        """The account's device with this token, or None."""
        where = "account_id = ? AND token = ?"
        rows = self._rows(_DEVICE_COLUMNS, "devices", where, account_id, token)
        return _device_from_row(rows[0]) if rows else None

    def list(self, account_id: str) -> Sequence[Device]:
        """The account's devices, newest first, deactivated ones included."""
        where = "account_id = ? ORDER BY id DESC"
        return [
            _device_from_row(r) for r in self._rows(_DEVICE_COLUMNS, "devices", where, account_id)
        ]

    def delete(self, account_id: str, device_id: str) -> bool:
        """Remove the device; False when the account has no such device."""
        cursor = self._conn.execute(
            "DELETE FROM devices WHERE id = ? AND account_id = ?", (device_id, account_id)
        )
        return cursor.rowcount > 0


class _Transaction:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.accounts = _Accounts(conn)
        self.api_keys = _ApiKeys(conn)
        self.devices = _Devices(conn)


@attrs.frozen
class Migration:
    """One numbered schema change, from ``migrations/sqlite/<version>_<name>.sql``."""

    version: int
    name: str
    sql: str


def load_migrations() -> list[Migration]:
    """The packaged SQLite migrations, in version order."""
    folder = resources.files("pushcore.storage") / "migrations" / "sqlite"
    found: list[Migration] = []
    for entry in folder.iterdir():
        match = _MIGRATION_FILE.fullmatch(entry.name)
        if match is not None:
            found.append(Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"duplicate SQLite migration versions: {versions}")
    return found


def split_statements(script: str) -> list[str]:
    """The statements of an SQL script, each complete and on its own."""
    # executescript() would commit the migration's transaction before running,
    # so statements go one by one through execute(); sqlite3.complete_statement
    # knows about quotes, comments and trigger bodies, a plain split on ";" does not.
    statements: list[str] = []
    pending = ""
    *pieces, last = script.split(";")
    for piece in pieces:
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip())
            pending = ""
    # What follows the last complete statement is usually blank or a comment;
    # anything else is kept so that SQLite, not this splitter, judges it.
    rest = (pending + last).strip()
    if rest:
        statements.append(rest)
    return statements


class SqliteStore:
    """A SQLite database file shared by threads and processes (WAL, BEGIN IMMEDIATE)."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._closed = False
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._migrate(load_migrations())
        except BaseException:
            self.close()  # nobody else holds this store to close it
            raise

    def _connect(self) -> sqlite3.Connection:
        with self._lock:
            if self._closed:
                raise sqlite3.ProgrammingError("Cannot operate on a closed store.")
            # isolation_level=None: the module must not open transactions
            # behind our back, we issue BEGIN ourselves. check_same_thread=False
            # only so close() may close other threads' connections; each
            # connection is otherwise used by its own thread alone.
            conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
            self._connections.append(conn)
        conn.row_factory = sqlite3.Row
        try:
            # busy_timeout first: switching to WAL needs a lock another process may hold.
            conn.execute("PRAGMA busy_timeout = 5000")
            conn.execute("PRAGMA journal_mode = WAL")
            # NORMAL is durable across application crashes in WAL mode; only a power
            # loss can lose the last commits, never corrupt the file.
            conn.execute("PRAGMA synchronous = NORMAL")
            # Off by default in SQLite; on, so that a foreign key a migration declares holds.
            conn.execute("PRAGMA foreign_keys = ON")
        except BaseException:
            with self._lock:
                self._connections.remove(conn)
            conn.close()
            raise
        return conn

    def _connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
        return conn

    def _migrate(self, migrations: Sequence[Migration]) -> None:
        conn = self._connection()
        for migration in migrations:
            # The version is checked inside the write lock, so when two processes
            # start at once the second sees the first's work and skips it.
            with self._begin("BEGIN IMMEDIATE"):
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations"
                    " (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
                )
                applied = conn.execute(
                    "SELECT 1 FROM schema_migrations WHERE version = ?", (migration.version,)
                ).fetchone()
                if applied is not None:
                    continue
                for statement in split_statements(migration.sql):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at)"
                    " VALUES (?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                    (migration.version, migration.name),
                )

    @contextmanager
    def _begin(self, begin: str, *, read_only: bool = False) -> Iterator[_Transaction]:
        conn = self._connection()
        if read_only:
            conn.execute("PRAGMA query_only = ON")
        try:
            conn.execute(begin)
            try:
                yield _Transaction(conn)
                conn.execute("COMMIT")
            finally:
                # Still open here means the block raised or COMMIT failed; leaving
                # it open would make this thread's next BEGIN fail.
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
        finally:
            if read_only:
                conn.execute("PRAGMA query_only = OFF")

    def transaction(self) -> AbstractContextManager[_Transaction]:
        """A write transaction: committed when the block ends, rolled back if it raises."""
        # IMMEDIATE takes the write lock up front, so a read-then-write inside the
        # block cannot fail half-way with SQLITE_BUSY; busy_timeout makes others wait.
        return self._begin("BEGIN IMMEDIATE")

    def read(self) -> AbstractContextManager[_Transaction]:
        """A read-only snapshot; writing through it raises sqlite3.OperationalError."""
        return self._begin("BEGIN", read_only=True)

    def ping(self) -> None:
        """Raise if the database cannot be reached."""
        self._connection().execute("SELECT 1").fetchone()

    def close(self) -> None:
        """Close every connection this store opened, in any thread."""
        with self._lock:
            self._closed = True
            connections, self._connections = self._connections, []
        for conn in connections:
            conn.close()
