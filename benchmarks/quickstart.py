"""What starting costs: `import pushcore` for the client, `pushctl --version`, a local send.

    .venv/bin/python -m benchmarks.quickstart [--runs 10 | --quick] [--before DIR] [--out FILE]

Each command is a fresh process, timed from outside: wall seconds, and the CPU
seconds (user + system) it used, which a machine shared with other work
inflates less than the wall time. The local send is ``pushctl --data-dir D
send hi --account a`` on SQLite, the database made by a warm-up run (so is
the bytecode: ``PYTHONDONTWRITEBYTECODE`` is cleared for the children).

``--before DIR``: a checkout of another tree (``git archive REV | tar -x -C
DIR``), run with ``PYTHONPATH=DIR`` and this interpreter; its runs alternate
with this tree's, so both see the same load. The load average is read before
and after. ``--out FILE`` writes the table printed (and the budget) to FILE too.

The floor row is Python with the libraries a local send cannot do without
(Typer, rich, attrs, cattrs, asyncio, sqlite3), and nothing of pushcore. After
the table, the budget of a local send: ``-X importtime``'s own time of each
module, the least of the runs, summed by part (pushcore's packages, each
library, the standard library), as shares of the imports' whole, which a
loaded machine inflates less than the times. docs/benchmarks.md ("Quick
start") has the figures and what they mean.
"""

from __future__ import annotations

import argparse
import collections
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
    "floor: Python, Typer, rich, attrs, cattrs, asyncio, sqlite3": [
        sys.executable,
        "-c",
        "import typer, rich.console, rich.table, attrs, cattrs, asyncio, sqlite3",
    ],
}
SEND = "local `pushctl send`"
# The parts of the budget: a module's first name, or pushcore's package under it.
PARTS = ("pushcore", "pushcore_cli", "pushcore_http")


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


def part_of(module: str) -> str:
    """The budget's part of a module: pushcore's packages by their second name
    (``pushcore.converter``), anything else by its first (``rich``, ``json``)."""
    names = module.split(".")
    return ".".join(names[:2]) if names[0] in PARTS else names[0]


def import_times(command: list[str], env: dict[str, str]) -> dict[str, int]:
    """Each module's own import time (microseconds) in one run of ``command``."""
    done = subprocess.run(
        command,
        env={**env, "PYTHONPROFILEIMPORTTIME": "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    own: dict[str, int] = {}
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            self_us, _, name = line.removeprefix("import time:").split("|")
            if self_us.strip().isdigit():
                own[name.strip()] = int(self_us)
    return own


def budget(command: list[str], env: dict[str, str], runs: int) -> list[str]:
    """The lines of a command's import budget: shares by part, largest first."""
    samples = [import_times(command, env) for _ in range(runs)]
    least = {m: min(s.get(m, 0) for s in samples) for m in samples[0]}
    parts: collections.Counter[str] = collections.Counter()
    for module, us in least.items():
        parts[part_of(module)] += us
    whole = sum(parts.values())
    lines = [
        f"Budget of a local send's imports (-X importtime, own time, least of {runs} runs):"
        f" {whole / 1000:.0f} ms in all, with importtime's own overhead.",
        "",
        "| part | ms | share |",
        "|---|---|---|",
    ]
    shown = parts.most_common(24)
    for part, us in shown:
        lines.append(f"| {part} | {us / 1000:.1f} | {100 * us / whole:.1f}% |")
    rest = whole - sum(us for _, us in shown)
    lines.append(
        f"| the rest ({len(parts) - len(shown)} parts) | {rest / 1000:.1f} |"
        f" {100 * rest / whole:.1f}% |"
    )
    return lines


def main() -> None:
    """Time the commands on this tree (and on ``--before``), print the table and the budget."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="3 runs: a first look")
    parser.add_argument("--before", type=Path, help="a checkout of the tree to compare with")
    parser.add_argument("--out", type=Path, help="also write what is printed to this file")
    args = parser.parse_args()
    runs = 3 if args.quick else args.runs
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
            for _ in range(runs):
                for label, tree in trees.items():
                    data = Path(tmp) / label
                    command = [part.replace("{data}", str(data)) for part in template]
                    wall, cpu = run(command, environment(tree))
                    results[name, label][0].append(wall)
                    results[name, label][1].append(cpu)
        loads.append(os.getloadavg()[0])
        send = [part.replace("{data}", str(Path(tmp) / "after")) for part in COMMANDS[SEND]]
        shares = budget(send, environment(None), runs)
    columns = list(trees)
    lines = [
        f"{runs} runs of each after a warm-up, {'alternating ' if len(trees) > 1 else ''}"
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
    text = "\n".join([*lines, "", *shares])
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
