"""Where the test suite's time goes: CPU and wall per directory, per worker, per test.

    .venv/bin/python -m benchmarks.testtime [--quick] [--workers N] [--top 30]
        [--out FILE] [--report DIR] [-- PYTEST ARGS]

Runs the parallel pass of ``./scripts/check.sh`` (``-n N --dist loadgroup -m "not
serial"``; ``--quick``: the in-process part, as ``check.sh --quick``; arguments after
``--`` replace the selection) with tests/timing.py recording each test, then prints:
the run's wall and CPU time (its processes and all they started) with the load
average before and after; per directory, the tests' CPU (own, and their children's,
running or reaped: servers, pushctl runs, Chromium) and summed wall; per worker, when
it started and ended its last test and how much of that it spent in tests; the
costliest tests by CPU and by wall; the costliest fixtures (set-up and teardown,
summed over their uses). ``--report DIR`` prints the figures of an earlier record
instead of running. ``--out FILE`` writes what is printed to FILE too.

On a machine shared with other work, compare CPU seconds and runs alternated with
the tree before (the wall time says as much about the neighbours as about the suite).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
QUICK = [
    *("tests/unit", "tests/services", "tests/http", "tests/test_docs.py", "tests/test_arrows.py"),
    *("-m", "not postgres and not slow"),
]


def load(directory: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The record's lines of tests and of fixtures, each with the worker that wrote it."""
    tests: list[dict[str, Any]] = []
    fixtures: list[dict[str, Any]] = []
    for path in sorted(directory.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            row = {**json.loads(line), "worker": path.stem}
            # A subtree leaving without being reaped (Chromium's renderers, orphaned when
            # it closes) takes CPU already counted out of the tree: no line is below 0.
            row["children"] = max(0.0, row["children"])
            (fixtures if "fixture" in row else tests).append(row)
    return tests, fixtures


def fixture_report(rows: list[dict[str, Any]], top: int) -> list[str]:
    """The fixtures costing most CPU in all (set-up and teardown, over every use)."""
    per: dict[tuple[str, str, str], list[float]] = collections.defaultdict(
        lambda: [0, 0.0, 0.0, 0.0]
    )
    for r in rows:
        total = per[(r["fixture"], r["scope"], r["where"])]
        total[0] += r["phase"] == "setup"
        total[1 if r["phase"] == "setup" else 2] += r["own"] + r["children"]
        total[3] += r["wall"]
    lines = [
        "",
        f"The {top} costliest fixtures by CPU (set-ups, CPU s set-up and teardown, "
        "summed wall s, fixture [scope] where):",
    ]
    for (name, scope, where_), (n, setup, teardown, wall) in sorted(
        per.items(), key=lambda kv: -(kv[1][1] + kv[1][2])
    )[:top]:
        lines.append(
            f"{n:6.0f} {setup:7.1f} {teardown:7.1f} {wall:8.0f}  {name} [{scope}] {where_}"
        )
    return lines


def where(test_id: str) -> str:
    """The directory a test is counted under: tests/<dir>, or tests/ for the top files."""
    parts = test_id.split("::", maxsplit=1)[0].split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else "tests/ (top)"


def report(rows: list[dict[str, Any]], top: int) -> str:
    """The tables, as text."""
    if not rows:
        return "no tests recorded\n"
    first, last = min(r["start"] for r in rows), max(r["end"] for r in rows)
    lines = [f"{len(rows)} tests, first start to last end {last - first:.0f} s", ""]
    per: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    for r in rows:
        total = per[where(r["id"])]
        for i, value in enumerate((1, r["own"], r["children"], r["end"] - r["start"])):
            total[i] += value
    lines.append(
        f"{'directory':22} {'tests':>6} {'own s':>8} {'children s':>10} {'CPU s':>8} {'wall s':>8}"
    )
    for name, (n, own, children, wall) in sorted(
        per.items(), key=lambda kv: -(kv[1][1] + kv[1][2])
    ):
        lines.append(
            f"{name:22} {n:6.0f} {own:8.1f} {children:10.1f} {own + children:8.1f} {wall:8.0f}"
        )
    own, children = sum(r["own"] for r in rows), sum(r["children"] for r in rows)
    lines += [f"{'all':22} {len(rows):6} {own:8.1f} {children:10.1f} {own + children:8.1f}", ""]
    for worker in sorted({r["worker"] for r in rows}):
        mine = [r for r in rows if r["worker"] == worker]
        busy = sum(r["end"] - r["start"] for r in mine)
        end = max(r["end"] for r in mine) - first
        lines.append(
            f"{worker}: {len(mine)} tests, last ended at {end:.0f} s, in tests {busy:.0f} s"
        )
    failed = [r["id"] for r in rows if r.get("outcome") == "failed"]
    lines += [f"failed: {test}" for test in failed]
    for title, key in (
        ("CPU", lambda r: r["own"] + r["children"]),
        ("wall", lambda r: r["end"] - r["start"]),
    ):
        lines += ["", f"The {top} costliest by {title} (CPU s, wall s, test):"]
        for r in sorted(rows, key=key, reverse=True)[:top]:
            lines.append(f"{r['own'] + r['children']:7.1f} {r['end'] - r['start']:7.1f}  {r['id']}")
    return "\n".join(lines) + "\n"


def run(directory: Path, workers: int, selection: list[str]) -> str:
    """Run pytest with the record on; a line of its wall and CPU and the load around it."""
    env = {**os.environ, "PUSHCORE_TEST_TIMES": str(directory)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as scripts/check.sh: reuse compiled modules
    command = [sys.executable, "-m", "pytest", "-p", "no:randomly", "-n", str(workers)]
    command += ["--dist", "loadgroup", *selection]
    load_before = os.getloadavg()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    status = subprocess.run(command, cwd=ROOT, env=env, check=False).returncode
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_user, cpu_sys = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    load_after = os.getloadavg()
    return (
        f"pytest {' '.join(command[3:])}: exit {status}, wall {wall:.0f} s, "
        f"CPU {cpu_user:.0f} + {cpu_sys:.0f} s; load average {load_before[0]:.1f} before, "
        f"{load_after[0]:.1f} after; record in {directory}\n\n"
    )


def main() -> None:
    """Run (or read) a record and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="the in-process tests only")
    parser.add_argument("--workers", type=int, default=(os.cpu_count() or 2) + 1)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--report", type=Path, help="print an earlier record's figures")
    parser.add_argument("pytest_args", nargs="*", help="after --: pytest's selection")
    args = parser.parse_args()
    if args.report is not None:
        directory, text = args.report, ""
    else:
        directory = Path(tempfile.mkdtemp(prefix="testtime-"))
        selection = args.pytest_args or (QUICK if args.quick else ["-m", "not serial"])
        text = run(directory, args.workers, selection)
    tests, fixtures = load(directory)
    text += report(tests, args.top)
    text += "\n".join(fixture_report(fixtures, args.top)) + "\n"
    print(text, end="")
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
