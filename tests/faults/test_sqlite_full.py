"""SQLite on a full disk: writes are a prompt 503, /readyz says so, reads go on.

The data directory is a small tmpfs the service itself fills, a real full
file system (ENOSPC), not a simulation: mounting needs root (CI runs as
root), so elsewhere the test is skipped, saying why.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

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

pytestmark = pytest.mark.slow

SIZE = "3m"
# 500 items of ~1.5 KB: ~0.8 MB a batch, under the 1 MiB body limit.
BATCH = {"notifications": [{"title": f"fill {i}", "body": "x" * 1500} for i in range(500)]}


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of SIZE mounted on a fresh directory, unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs (a real full disk) needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={SIZE},mode=0700", "tmpfs", mount], check=True
    )
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", mount], check=False)


def test_a_full_disk_is_a_503_for_writes_not_ready_and_reads_go_on(
    tmp_path: Path, small_disk: Path
) -> None:
    server = Server(small_disk / "data")
    server.log = tmp_path / "server.log"  # the log must not need the full disk
    server.start()
    try:
        key = server.key("alice")
        fresh = server.key("alice")  # never used: its first use wants a lastUsedAt write
        assert create(server, key)[0].status_code == 201
        # Fill the disk the way a busy service does: big writes fail first...
        for _ in range(20):
            response, took = timed(
                server, "POST", "/api/notifications/batch", json=BATCH, headers=key
            )
            assert took < REQUEST_BOUND
            if response.status_code != 201:
                break
        assert_unavailable(response)
        assert "disk is full" in response.json()["error"]
        # ... then small ones, once the space the failed ones had taken is used up.
        for _ in range(200):
            response, took = create(server, key, "small")
            assert took < REQUEST_BOUND
            if response.status_code != 201:
                break
        assert_unavailable(response)
        # Readiness writes too (one page), so it is not ready once the few pages the
        # last failed create had taken are used up, and then stays so.
        answers: list[int] = []
        while len(answers) < 30 and answers[-4:] != [503] * 4:
            ready, took = timed(server, "GET", "/readyz")
            assert took < READY_BOUND, f"/readyz took {took:.2f} s"
            answers.append(ready.status_code)
        assert answers[-4:] == [503] * 4, answers
        assert ready.json()["checks"]["database"] == "down"
        # Reads need no space: the listing, and a key's first authentication.
        listed, took = timed(server, "GET", "/api/notifications?limit=1", headers=fresh)
        assert listed.status_code == 200, listed.text
        assert took < REQUEST_BOUND
        stats, _ = timed(server, "GET", "/api/notifications/stats", headers=fresh)
        assert stats.status_code == 200, stats.text
        # Room again (the operator grew the volume): ready within seconds, writes work.
        subprocess.run(["mount", "-o", "remount,size=64m", small_disk], check=True)
        ready_within(server, RECOVERY_BOUND)
        assert create(server, key, "after")[0].status_code == 201
    finally:
        server.stop()
        time.sleep(0.1)
