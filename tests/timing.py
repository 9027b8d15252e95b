"""A record of what each test cost, for benchmarks/testtime.py (off unless asked for).

With PUSHCORE_TEST_TIMES=DIR, each pytest process (each xdist worker) appends one
JSON line a test to DIR/<worker>.jsonl: its wall time from set-up to teardown,
its start and end (to see which worker waited for which), the CPU of the process
itself and of its children (servers, pushctl runs, Playwright and Chromium), the
xdist group it was sent with, and its outcome; and one line a fixture set up or torn
down (its name, scope and where it is defined, with the same CPU figures).

A child's CPU counts where it was spent: the children still running (and what they
reaped) are read from /proc at each test's start and end, and a child reaped meanwhile
adds what it spent since last read. So a module's server or the browser package's
Chromium counts in the tests it served, not in whichever test reaped it. (Reaped
children alone missed half of Chromium's CPU: its renderers' is held by a process that
is orphaned, never reaped, when Chromium closes. That loss shows as a negative figure
in the line where it happens; benchmarks/testtime.py counts it as 0.)
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Generator
from pathlib import Path
from typing import IO, Any

import pytest

TICK = os.sysconf("SC_CLK_TCK")


def _children_of(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as listed:
                found += [int(child) for child in listed.read().split()]
    except OSError:  # gone meanwhile, or no /proc (then only reaped children count)
        pass
    return found


def _tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid``'s live descendants, each with the children it reaped."""
    total, todo = 0, _children_of(pid)
    while todo:
        child = todo.pop()
        try:
            with open(f"/proc/{child}/stat", encoding="ascii", errors="replace") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        total += sum(int(field) for field in fields[11:15])  # utime stime cutime cstime
        todo += _children_of(child)
    return total / TICK


def _cpu() -> tuple[float, float]:
    """This process's CPU, and its children's (reaped, plus the live ones' so far)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    children = reaped.ru_utime + reaped.ru_stime + _tree_cpu(os.getpid())
    return own.ru_utime + own.ru_stime, children


class TimingRecorder:
    """The pytest plugin writing the record (registered by tests/conftest.py)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.out: IO[str] | None = None
        self.outcome = "passed"
        self.teardowns: dict[int, tuple[float, float, float]] = {}

    def write(self, line: dict[str, Any]) -> None:
        """One line of the record."""
        if self.out is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
            self.out = (self.directory / f"{worker}.jsonl").open("a", encoding="utf-8")
        self.out.write(json.dumps(line) + "\n")
        self.out.flush()

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
        self.write(
            {
                "id": item.nodeid.split("@")[0],
                "start": started,
                "end": ended,
                "own": own_after - own,
                "children": children_after - children,
                "group": group.args[0] if group and group.args else None,
                "outcome": self.outcome,
            }
        )

    def fixture_line(self, fixturedef: Any, phase: str, start: tuple[float, float, float]) -> None:
        """A fixture's set-up or teardown: what it cost since ``start``."""
        ended, (own, children) = time.time(), _cpu()
        self.write(
            {
                "fixture": fixturedef.argname,
                "scope": fixturedef.scope,
                "where": fixturedef.baseid or "(plugin)",
                "phase": phase,
                "wall": ended - start[0],
                "own": own - start[1],
                "children": children - start[2],
            }
        )

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef: Any) -> Generator[None, None, None]:
        """Time a fixture's set-up; mark where its teardown starts."""
        start = (time.time(), *_cpu())
        yield
        self.fixture_line(fixturedef, "setup", start)

        # Finalizers run last first: this one, added after the fixture's own, runs
        # just before it, and pytest_fixture_post_finalizer just after.
        def teardown_starts() -> None:
            self.teardowns[id(fixturedef)] = (time.time(), *_cpu())

        fixturedef.addfinalizer(teardown_starts)

    def pytest_fixture_post_finalizer(self, fixturedef: Any) -> None:
        """Time a fixture's teardown (from the mark set at its set-up)."""
        start = self.teardowns.pop(id(fixturedef), None)
        if start is not None:
            self.fixture_line(fixturedef, "teardown", start)
