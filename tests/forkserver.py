"""`pushctl` processes forked from one that has imported the package already.

A `pushctl serve` started as `python -m pushcore_cli.main` spends about a second of
CPU importing the package and its libraries before it serves, and the suite starts
well over a hundred of them: that import was the largest cost its servers had. So
each test process keeps one zygote (``python -m tests.forkserver``): it imports what
`serve` and `worker` import, then, asked on its stdin, forks a child that sets the
asked environment, working directory, output file and arguments and runs
`pushcore_cli.main` as `python -m` would. The child is a real process of its own
(its own pid, signals, exit code, kill -9); only the imports are shared, as pages
copied on write. The zygote reports each child's pid, then its exit status (it
is the parent that can wait for it), on its stdout.

`PUSHCORE_TEST_FORK=0` starts every process with `python -m` instead. The tests
of starting itself (`tests/cli/test_serve.py`, `tests/test_light_imports.py`) do so
always: they are about a fresh interpreter.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib
import json
import os
import runpy
import select
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Protocol

ROOT = Path(__file__).resolve().parents[1]

# What `pushctl serve` and `pushctl worker` import on their way to serving (the top of
# `python -X importtime -m pushcore_cli.main serve`), and the PostgreSQL store. A module
# left out costs only its import in each child.
PRELOAD = (
    "pushcore_cli.main",
    "pushcore_cli.plain_values",
    "pushcore_cli.commands.serve",
    "pushcore_cli.commands.worker",
    "typer._adapters",
    "pydantic.plugin._loader",
    "pushcore_http",
    "pushcore_http.server",
    "pushcore.storage.sqlite",
    "pushcore.storage.postgres",
    "pushcore.gateways.vapid",
    "pushcore.gateways.webhook",
    "uvicorn",
    "uvicorn.protocols.http.httptools_impl",
    "uvicorn.protocols.websockets.websockets_sansio_impl",
    "uvloop",
    "pushcore.delivery.config",
    "pushcore.delivery.ledger",
    "pushcore.delivery.recorder",
    "pushcore.delivery.recurring",
    "pushcore.delivery.rollup",
    "pushcore.delivery.webhooks",
    "pushcore.recurrence.dateutil_rules",
    "pushcore.services.schedules",
    "pushcore.storage.sql.events",
    "pushcore.storage.sql.retention",
    "pushcore.storage.sql.schedules",
    "pushcore.storage.sql.people",
    "pushcore.storage.sql.oidc",
)


class Process(Protocol):
    """What the tests use of a started process (a subprocess.Popen or a :class:`Forked`)."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | Any: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def send_signal(self, sig: int) -> None: ...

    def terminate(self) -> None: ...

    def kill(self) -> None: ...


def enabled() -> bool:
    return os.environ.get("PUSHCORE_TEST_FORK", "1") != "0"


def start(
    args: list[str],
    env: dict[str, str],
    log: Path,
    cwd: Path | None = None,
    preexec_fn: Callable[[], None] | None = None,
) -> Process:
    """`pushctl *args` with ``env``, its output appended to ``log``; started cold (`python
    -m`) when ``preexec_fn`` is given (run in the child first, e.g. to lower a limit)."""
    if not enabled() or preexec_fn is not None:
        with log.open("ab") as sink:
            return subprocess.Popen(
                [sys.executable, "-m", "pushcore_cli.main", *args],
                env=env,
                cwd=cwd,
                stdout=sink,
                stderr=subprocess.STDOUT,
                preexec_fn=preexec_fn,  # noqa: PLW1509 (sets a limit, starts no thread)
            )
    return _zygote().spawn(args, env, log, cwd or Path.cwd())


class Forked:
    """A child of the zygote, used as a subprocess.Popen is."""

    def __init__(self, zygote: Zygote, pid: int, args: list[str]) -> None:
        self._zygote = zygote
        self.pid = pid
        self.args = args
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._zygote.exit_code(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        code = self._zygote.wait(self.pid, timeout)
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        self.returncode = code
        return code

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class Zygote:
    """The test process's side: asks for children and keeps their exit codes."""

    def __init__(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.forkserver"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={k: v for k, v in os.environ.items() if not k.startswith("PUSHCORE_")},
        )
        self._asking = threading.Lock()
        self._changed = threading.Condition()
        self._started: list[int] = []
        self._codes: dict[int, int] = {}
        threading.Thread(target=self._read, name="forkserver", daemon=True).start()

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            kind, pid, *rest = line.split()
            with self._changed:
                if kind == b"pid":
                    self._started.append(int(pid))
                else:
                    self._codes[int(pid)] = int(rest[0])
                self._changed.notify_all()
        with self._changed:  # the zygote is gone: no child of it reports again
            self._started.append(-1)
            self._changed.notify_all()

    def spawn(self, args: list[str], env: dict[str, str], log: Path, cwd: Path) -> Forked:
        asked = {"args": args, "env": env, "log": str(log), "cwd": str(cwd)}
        with self._asking:
            assert self._process.stdin is not None
            self._process.stdin.write(json.dumps(asked).encode() + b"\n")
            self._process.stdin.flush()
            with self._changed:
                if not self._changed.wait_for(lambda: self._started, 30):
                    raise RuntimeError("the fork server did not answer")
                pid = self._started.pop(0)
        if pid < 0:
            raise RuntimeError("the fork server exited")
        return Forked(self, pid, args)

    def exit_code(self, pid: int) -> int | None:
        with self._changed:
            return self._codes.get(pid)

    def wait(self, pid: int, timeout: float | None) -> int | None:
        with self._changed:
            self._changed.wait_for(lambda: pid in self._codes, timeout)
            return self._codes.get(pid)

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()  # the zygote exits at the end of its input
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(5)


@functools.cache
def _zygote() -> Zygote:
    """This test process's zygote, made at its first use and closed at its exit."""
    zygote = Zygote()
    atexit.register(zygote.close)
    return zygote


# The zygote itself: one thread, no event loop, nothing started, so that a fork of it
# is safe; it only imports, forks, reaps and reports.


def _serve() -> None:
    for name in PRELOAD:
        importlib.import_module(name)
    control = sys.stdin.fileno()
    report = sys.stdout.buffer
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    pending = b""
    while True:
        ready, _, _ = select.select([control, wake_read], [], [])
        if wake_read in ready:
            os.read(wake_read, 4096)
        _reap(report)
        if control in ready:
            chunk = os.read(control, 65536)
            if not chunk:
                return
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                pid = os.fork()
                if pid == 0:
                    os.close(wake_read)
                    os.close(wake_write)
                    _child(json.loads(line))
                report.write(b"pid %d\n" % pid)
                report.flush()


def _reap(report: IO[bytes]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        report.write(b"exit %d %d\n" % (pid, os.waitstatus_to_exitcode(status)))
        report.flush()


def _child(asked: dict[str, Any]) -> None:
    """In the forked child: become `python -m pushcore_cli.main *args`; never returns."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        out = os.open(asked["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.close(null)
        os.close(out)
        os.chdir(asked["cwd"])
        os.environ.clear()
        os.environ.update(asked["env"])
        time.tzset()
        sys.argv = ["pushctl", *asked["args"]]
        runpy.run_module("pushcore_cli.main", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exit_:
        if exit_.code is None or isinstance(exit_.code, int):
            code = exit_.code or 0
        else:
            print(exit_.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
    finally:
        # What an interpreter does at its end: wait for its threads, run atexit.
        with contextlib.suppress(BaseException):
            threading._shutdown()  # type: ignore[attr-defined]
            atexit._run_exitfuncs()
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


if __name__ == "__main__":
    _serve()
