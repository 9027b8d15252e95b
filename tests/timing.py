"""A record of what each test cost, for benchmarks/testtime.py (off unless asked for).

With PUSHCORE_TEST_TIMES=DIR, each pytest process (each xdist worker) appends one
JSON line a test to DIR/<worker>.jsonl: its wall time from set-up to teardown,
its start and end (to see which worker waited for which), the CPU of the process
itself and of the children it reaped meanwhile (servers, pushctl runs, Chromium:
a child's CPU counts where it was reaped, so a module's server counts in the
module's last test), the xdist group it was sent with, and its outcome.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Generator
from pathlib import Path
from typing import IO

import pytest


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


class TimingRecorder:
    """The pytest plugin writing the record (registered by tests/conftest.py)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.out: IO[str] | None = None
        self.outcome = "passed"

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Keep the test's worst outcome over its set-up, call and teardown."""
        if report.failed or (report.skipped and self.outcome == "passed"):
            self.outcome = report.outcome

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, None, None]:
        """Time one test's set-up, call and teardown."""
        started, (own, children) = time.time(), _cpu()
        self.outcome = "passed"
        yield
        ended, (own_after, children_after) = time.time(), _cpu()
        group = item.get_closest_marker("xdist_group")
        line = {
            "id": item.nodeid.split("@")[0],
            "start": started,
            "end": ended,
            "own": own_after - own,
            "children": children_after - children,
            "group": group.args[0] if group and group.args else None,
            "outcome": self.outcome,
        }
        if self.out is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
            self.out = (self.directory / f"{worker}.jsonl").open("a", encoding="utf-8")
        self.out.write(json.dumps(line) + "\n")
        self.out.flush()
