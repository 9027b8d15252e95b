"""A child process that must not outlive the process that started it."""

from __future__ import annotations

import os
import signal
import sys

_PR_SET_PDEATHSIG = 1


def stop_with(parent: int) -> None:
    """Have the kernel send this process SIGTERM when ``parent`` dies (Linux); exit at
    once if it is already gone."""
    if sys.platform == "linux":
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # it died before the line above
        raise SystemExit(0)
