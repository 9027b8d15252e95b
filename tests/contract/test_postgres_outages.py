"""PostgreSQL outages in the store: timeouts end waits, the watchdog cuts a transaction
that gets no answer, the breaker spares the other callers, errors are Unavailable.

The bounds are made short here; tests/faults/ stops and freezes a real server.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import psycopg
import psycopg_pool
import pytest
from psycopg import errors

from pushcore.domain.errors import Unavailable
from pushcore.storage.postgres import PostgresStore
from pushcore.storage.postgres import store as postgres_module
from pushcore.storage.postgres.dialect import POSTGRES
from tests.pg import Cluster

pytestmark = pytest.mark.postgres


@pytest.fixture
def url(pg_cluster: Cluster) -> str:
    return pg_cluster.create_database()


@pytest.fixture
def store(url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[PostgresStore]:
    """A store whose transactions get 1 s, lock waits 0.3 s."""
    monkeypatch.setattr(postgres_module, "TRANSACTION_DEADLINE", 1.0)
    monkeypatch.setattr(postgres_module, "LOCK_TIMEOUT", 0.3)
    opened = PostgresStore(url, pool_size=3)
    yield opened
    opened.close()


def test_a_lock_held_past_the_lock_timeout_is_unavailable(store: PostgresStore, url: str) -> None:
    with psycopg.connect(url) as holder:
        holder.execute("SELECT pg_advisory_xact_lock(1, 2)")  # until its transaction ends
        started = time.monotonic()
        with pytest.raises(Unavailable, match="locked"), store.transaction() as tx:
            tx._sql.run("SELECT pg_advisory_xact_lock(1, 2)")
        assert time.monotonic() - started < 2.0
    store.ping()  # the connection is still good


def test_a_transaction_without_an_answer_is_cut_and_the_breaker_spares_the_others(
    store: PostgresStore,
) -> None:
    # pg_sleep stands in for a server that stopped answering: the watchdog
    # does not know the difference.
    started = time.monotonic()
    with pytest.raises(Unavailable, match=r"did not answer within 1 s"), store.read() as tx:
        tx._sql.run("SELECT pg_sleep(5)")
    assert time.monotonic() - started < 2.0
    # Open: a caller trying (here one that hangs again) makes the others fail at once.
    trying = threading.Event()
    trial_failed: list[Exception] = []

    def trial() -> None:
        try:
            with store.read() as tx:
                trying.set()
                tx._sql.run("SELECT pg_sleep(5)")
        except Unavailable as exc:
            trial_failed.append(exc)

    thread = threading.Thread(target=trial)
    thread.start()
    try:
        assert trying.wait(5)
        started = time.monotonic()
        with pytest.raises(Unavailable, match="not answering"):
            store.ping()
        assert time.monotonic() - started < 0.2
    finally:
        thread.join()
    assert len(trial_failed) == 1  # cut too
    # The next caller is the trial, succeeds, and closes the breaker.
    store.ping()
    store.ping()


@pytest.mark.parametrize(
    ("error", "says"),
    [
        (psycopg_pool.PoolTimeout("couldn't get a connection"), "cannot be reached"),
        (errors.DiskFull("could not extend file"), "disk is full"),
        (errors.AdminShutdown("terminating connection"), "cannot be reached"),
        (errors.QueryCanceled("canceling statement"), "statement timeout"),
        (psycopg.OperationalError("connection refused"), "cannot be reached"),
    ],
)
def test_driver_errors_of_an_outage_are_unavailable(error: Exception, says: str) -> None:
    unavailable = POSTGRES.unavailable(error)
    assert unavailable is not None
    assert says in unavailable.message


@pytest.mark.parametrize(
    "error",
    [
        psycopg_pool.PoolClosed("the pool is closed"),  # used after close(): a bug
        errors.UndefinedTable("no such table"),
        errors.UniqueViolation("duplicate key"),
        ValueError("not a driver error"),
    ],
)
def test_other_errors_stay_themselves(error: Exception) -> None:
    assert POSTGRES.unavailable(error) is None
