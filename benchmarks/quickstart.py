"""What starting costs: `import pushcore` for the client, `pushctl --version`, a local send.

    .venv/bin/python -m benchmarks.quickstart [--runs 10] [--before DIR]

Each command is a fresh process, timed from outside: wall seconds, and the CPU
seconds (user + system) it used, which a machine shared with other work
inflates less than the wall time. The local send is ``pushctl --data-dir D
send hi --account a`` on SQLite, the database made by a warm-up run (so is
the bytecode: ``PYTHONDONTWRITEBYTECODE`` is cleared for the children).

``--before DIR``: a checkout of another tree (``git archive REV | tar -x -C
DIR``), run with ``PYTHONPATH=DIR`` and this interpreter; its runs alternate
with this tree's, so both see the same load. The load average is read before
and after. docs/benchmarks.md ("Quick start") has the figures and what they mean.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PUSHCTL = str(Path(sys.executable).with_name("pushctl"))
COMMANDS = {
    "`import pushcore` for the `Client`": [
        sys.executable,
        "-c",
        "import pushcore; pushcore.Client",
    ],
    "`pushctl --version`": [PUSHCTL, "--version"],
    "local `pushctl send`": [PUSHCTL, "--data-dir", "{data}", "send", "hi", "--account", "a"],
}


def environment(tree: Path | None) -> dict[str, str]:
    """This process's environment, with bytecode written and ``tree`` first on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUSHCORE_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONPATH", None)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    return env


def run(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``command`` (which must succeed)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def spread(values: list[float]) -> str:
    """min / median / max, in seconds."""
    return f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}"


def main() -> None:
    """Time the three commands on this tree (and on ``--before``), print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--before", type=Path, help="a checkout of the tree to compare with")
    args = parser.parse_args()
    trees: dict[str, Path | None] = {"after": None}
    if args.before is not None:
        trees = {"before": args.before.resolve(), "after": None}
    results: dict[tuple[str, str], tuple[list[float], list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        loads = [os.getloadavg()[0]]
        for name, template in COMMANDS.items():
            for label, tree in trees.items():
                data = Path(tmp) / label
                command = [part.replace("{data}", str(data)) for part in template]
                run(command, environment(tree))  # warm-up: bytecode, the database
                results[name, label] = ([], [])
            for _ in range(args.runs):
                for label, tree in trees.items():
                    data = Path(tmp) / label
                    command = [part.replace("{data}", str(data)) for part in template]
                    wall, cpu = run(command, environment(tree))
                    results[name, label][0].append(wall)
                    results[name, label][1].append(cpu)
        loads.append(os.getloadavg()[0])
    columns = list(trees)
    lines = [
        f"{args.runs} runs of each after a warm-up, {'alternating ' if len(trees) > 1 else ''}"
        f"on {os.cpu_count()} cores; load average {loads[0]:.1f} before, {loads[1]:.1f} after."
        " Seconds, min / median / max.",
        "",
        "| | " + " | ".join(f"{c} wall | {c} CPU" for c in columns) + " |",
        "|---|" + "---|---|" * len(columns),
    ]
    for name in COMMANDS:
        cells = []
        for label in columns:
            walls, cpus = results[name, label]
            cells += [spread(walls), spread(cpus)]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
