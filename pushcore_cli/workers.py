"""`pushctl serve --workers N`: N server processes on one listening socket, supervised.

The parent binds the port, forks N children and only watches them: each
child builds its own services (its own database connections, id order and
event loop; nothing opened before the fork is used after it) and serves the
inherited socket with uvicorn, where the kernel spreads the connections. The
delivery engine, and with it the schedule materialiser and the event sender,
runs in worker 1 only (or in none, with ``--no-engine``).

Stopping: SIGTERM or SIGINT to the parent is passed on as one SIGTERM to
each child (each stops as a single server does: live channels ended, the
requests in flight finished, in-flight deliveries finished or handed back),
and a child still there after :data:`KILL_AFTER` seconds is killed. The
children have a process group of their own, so a Ctrl-C reaches them only
through the parent, once. A child that ends by itself stops the others and
the parent exits with its status: a half-running server is not left to look
healthy (a service manager restarts the whole). On Linux each child also
gets SIGTERM when the parent dies, even by SIGKILL.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import traceback
from collections.abc import Callable
from types import FrameType

from pushcore.runtime.parent import stop_with
from pushcore_cli import output

KILL_AFTER = 15
"""Seconds a stop waits for the children before SIGKILL (a single server takes at most 5)."""


def supervise(count: int, run: Callable[[int], None]) -> int:
    """Fork ``count`` children running ``run(index)`` (0 first) and wait for all of them
    to end; the exit status for the parent (0 after a stop asked for by a signal)."""
    parent = os.getpid()
    children: dict[int, int] = {}
    stopping = False
    status = 0

    def stop_all(reason: int = signal.SIGTERM) -> None:
        for pid in children:
            with contextlib.suppress(ProcessLookupError):  # gone, not yet waited for
                os.kill(pid, reason)

    def on_signal(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        if not stopping:
            stopping = True
            stop_all()
            signal.alarm(KILL_AFTER)

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        output.error(f"workers still running after {KILL_AFTER} s: killed")
        stop_all(signal.SIGKILL)

    signal.signal(signal.SIGALRM, on_alarm)
    # Signals wait until every child is forked (and known to stop_all).
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    try:
        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        for index in range(count):
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _child(parent, index, run)  # never returns
            children[pid] = index
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    while children:
        pid, wait_status = os.wait()  # a signal's handler runs, then the wait goes on
        index = children.pop(pid)
        code = os.waitstatus_to_exitcode(wait_status)
        if not stopping:
            output.error(f"worker {index + 1} (pid {pid}) exited ({code}): stopping the others")
            stopping = True
            status = code if code > 0 else 1
            stop_all()
            signal.alarm(KILL_AFTER)
    signal.alarm(0)
    return status


def _child(parent: int, index: int, run: Callable[[int], None]) -> None:
    """The forked child: serve, then exit (never back into the parent's code)."""
    code = 1
    try:
        # Its own process group: a terminal's Ctrl-C goes to the parent, which passes it on.
        os.setpgid(0, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
        stop_with(parent)
        run(index)
        code = 0
    except SystemExit as exit:
        code = exit.code if isinstance(exit.code, int) else 1
    except KeyboardInterrupt:
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
