"""One account hammering the API does not slow another down (API.md, limits and fairness).

A real `pushctl serve` process with the default limits; account A sends GETs
over 200 connections from another process (benchmarks/load.py) while account
B sends one request every 20 ms. Before rate limits, B's median went from a
few ms to hundreds; the bound here (twice idle plus 20 ms) is generous and
still fails that way (with PUSHCORE_RATE_LIMIT=0 it fails today too).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.server import Server

pytestmark = pytest.mark.slow

CONNECTIONS = 200
HAMMER_SECONDS = 5.0
PACE = 0.02


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    """`pushctl serve` with the default limits (the suite's environment notwithstanding)."""
    running = Server(
        tmp_path / "data", env={"PUSHCORE_RATE_LIMIT": "100", "PUSHCORE_RATE_LIMIT_BURST": "500"}
    )
    running.start()
    yield running
    running.stop()


def paced_latencies(
    client: httpx.Client, headers: dict[str, str], until: Callable[[], bool]
) -> tuple[list[float], list[int]]:
    """Milliseconds of B's GET /api/devices, one every PACE seconds, and the statuses."""
    took: list[float] = []
    codes: list[int] = []
    while not until():
        started = time.perf_counter()
        codes.append(client.get("/api/devices", headers=headers).status_code)
        elapsed = time.perf_counter() - started
        took.append(elapsed * 1000)
        time.sleep(max(0.0, PACE - elapsed))
    return took, codes


def test_an_account_over_its_limit_does_not_slow_another_down(server: Server) -> None:
    hammer_key = server.key("hammer")["X-API-Key"]
    victim = server.key("victim")
    with httpx.Client(base_url=server.base, timeout=30) as client:
        stop = time.monotonic() + 2
        idle, _ = paced_latencies(client, victim, lambda: time.monotonic() > stop)
        hammer = server.hammer(hammer_key, CONNECTIONS, HAMMER_SECONDS)
        time.sleep(1)  # past the hammer's burst
        busy, codes = paced_latencies(client, victim, lambda: hammer.poll() is not None)
        out, _ = hammer.communicate(timeout=60)
    statuses = json.loads(out)["statuses"]

    idle_p50 = statistics.median(idle)
    busy_p50 = statistics.median(busy)
    assert busy_p50 < 2 * idle_p50 + 20, (idle_p50, busy_p50)
    assert set(codes) == {200}
    # Held to its limit (a burst of 500, then 100 a second), however much this machine let
    # it ask: "more refused than answered" failed on a busy machine, where the hammer
    # asked less (955 answered within its limit, 855 refused).
    assert statuses.get("200", 0) <= 500 + 100 * (HAMMER_SECONDS + 1), statuses
    assert statuses.get("429", 0) > 0, statuses
