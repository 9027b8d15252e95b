"""PostgreSQL stopped or frozen under a running server: prompt 503s, /readyz in a second,
ready again within seconds of the return, however long the outage.

The cluster is the module's own (tests/pg.py), not the session's: these tests
stop and freeze it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.e2e.server import Server
from tests.faults.conftest import (
    READY_BOUND,
    RECOVERY_BOUND,
    REQUEST_BOUND,
    assert_unavailable,
    create,
    ready_within,
    timed,
)

if TYPE_CHECKING:
    from tests.pg import Cluster

# Each bounds a time (a 503 or /readyz within its bound): after the parallel pass.
pytestmark = [pytest.mark.slow, pytest.mark.postgres, pytest.mark.serial]

# The first request after the server stops finds the pool's connections gone
# (at once) or waits for a new one (3 s); API.md's 10 s is the outer bound.
FIRST_503_BOUND = 5.0
# psycopg_pool's own reconnect backoff doubles (1, 2, 4, 8, 16 s ..., each +-10%): its
# fourth try comes at most 16.5 s into the outage, its fifth not before 27.9 s. An
# outage that ends just after 16.5 s leaves that backoff's next try 10 s away, twice
# RECOVERY_BOUND, with room for a loaded machine's slow turns of the loop below. (It
# was 30 s, which ends where the fifth try may just follow, and took 13 s longer.
# With the pool's own 5-minute backoff put back, this test failed at 18 s, loaded:
# "not ready 5.2 s after the database came back".)
OUTAGE_SECONDS = 17.0


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """A PostgreSQL server of this module's own, to stop and freeze."""
    from tests.pg import MISSING, Cluster, find_bin_dir

    bin_dir = find_bin_dir()
    if bin_dir is None:
        pytest.fail(MISSING, pytrace=False)
    own = Cluster(bin_dir)
    try:
        own.start()
        yield own
    finally:
        own.stop()


def started(tmp_path: Path, cluster: Cluster) -> tuple[Server, dict[str, str]]:
    """A `pushctl serve` on a fresh database of ``cluster``, a key, and a few creates done
    (so its pool holds connections, as a running service's does)."""
    server = Server(tmp_path / "data", env={"PUSHCORE_DATABASE_URL": cluster.create_database()})
    server.start()
    key = server.key("alice")
    for _ in range(3):
        assert create(server, key)[0].status_code == 201
    return server, key


def created_within(server: Server, key: dict[str, str], seconds: float) -> float:
    """Create until one is a 201; the seconds that took (AssertionError past ``seconds``)."""
    started_at = time.monotonic()
    while True:
        response, took = create(server, key, "after")
        assert took < REQUEST_BOUND
        waited = time.monotonic() - started_at
        if response.status_code == 201:
            return waited
        assert_unavailable(response)
        assert waited < seconds, f"no 201 {waited:.1f} s after the database came back"
        time.sleep(0.2)


def test_a_stopped_database_is_a_prompt_503_and_ready_soon_after_its_return(
    tmp_path: Path, cluster: Cluster
) -> None:
    server, key = started(tmp_path, cluster)
    try:
        cluster.halt()
        try:
            halted = time.monotonic()
            response, took = create(server, key, "while down")
            assert_unavailable(response)
            assert took < FIRST_503_BOUND, f"the first 503 took {took:.1f} s"
            # Through the outage: every answer prompt, every create a 503, never ready.
            while time.monotonic() - halted < OUTAGE_SECONDS:
                ready, took = timed(server, "GET", "/readyz")
                assert ready.status_code == 503
                assert ready.json()["checks"]["database"] == "down"
                assert took < READY_BOUND, f"/readyz took {took:.2f} s"
                response, took = create(server, key, "while down")
                assert_unavailable(response)
                assert took < FIRST_503_BOUND
                time.sleep(max(0.0, min(1.0, OUTAGE_SECONDS - (time.monotonic() - halted))))
        finally:
            cluster.resume()
        ready_within(server, RECOVERY_BOUND)
        created_within(server, key, RECOVERY_BOUND)
    finally:
        server.stop()


def test_a_frozen_database_is_a_503_within_the_bound_and_readyz_answers_at_once(
    tmp_path: Path, cluster: Cluster
) -> None:
    server, key = started(tmp_path, cluster)
    try:
        frozen = cluster.freeze()  # the sockets stay open; nothing answers
        try:
            ready, took = timed(server, "GET", "/readyz")
            assert ready.status_code == 503
            assert took < READY_BOUND, f"/readyz took {took:.2f} s"
            response, took = create(server, key, "while frozen")
            assert_unavailable(response)
            assert took < REQUEST_BOUND, f"the 503 took {took:.1f} s"
            # Once one wait ran out, others do not wait it out again.
            listed, took = timed(server, "GET", "/api/notifications", headers=key)
            assert_unavailable(listed)
            assert took < REQUEST_BOUND
            ready, took = timed(server, "GET", "/readyz")
            assert ready.status_code == 503
            assert took < READY_BOUND, f"/readyz took {took:.2f} s"
        finally:
            cluster.thaw(frozen)
        ready_within(server, RECOVERY_BOUND)
        created_within(server, key, RECOVERY_BOUND)
    finally:
        server.stop()
