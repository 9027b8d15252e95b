"""Instructions a command runs, counted under valgrind's cachegrind: a figure the
machine's load does not move (the benchmarks' A/B on a busy machine)."""

from __future__ import annotations

import re
import subprocess
from typing import Any

VALGRIND = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]


def count_instructions(command: list[str], **run: Any) -> int:
    """Instructions ``command`` ran (``run``: subprocess.run's env, cwd...)."""
    done = subprocess.run(VALGRIND + command, check=True, capture_output=True, text=True, **run)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if found is None:
        raise RuntimeError(done.stderr[-2000:])
    return int(found.group(1).replace(",", ""))
