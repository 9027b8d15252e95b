"""The event sender in a process of its own, beside the engine of `pushctl serve` or
`pushctl worker` (``PUSHCORE_EVENTS_PROCESS``, on by default).

Why: an event costs about what a delivery costs (an HTTP POST through aiohttp, the
signing, its share of a recording transaction). On the engine's event loop, under
its interpreter lock, that CPU came out of the engine's own rate (20-78% fewer
deliveries a second with events on; docs/benchmarks.md). In a process of its own
the sender runs on another core, or at least takes its own share of a busy one.

Nothing is handed over between the two processes but the settings: the outbox is
the queue. The engine writes each event and its attempts in the transaction of
the change it reports; this process claims them from the database under a lease
exactly as the in-process sender does (delivery/webhooks.py), so a sender killed
at any moment loses nothing (its claims come back when their leases end), and
the events' form, signatures, retries and order are the in-process sender's.

Its life follows the engine's, from the first sign of work: started once an
endpoint exists or the outbox holds an attempt (checked when the engine starts,
then every :data:`CHECK_EVERY` seconds: a query, not an interpreter of ~0.4 CPU s
for a server no endpoint ever asks events of), and from then on running until the
engine stops:
sent SIGTERM when it stops (SIGKILL after :data:`STOP_WITHIN` seconds), started again
:data:`RESTART_AFTER` seconds after it ends by itself. On Linux it also gets SIGTERM
when its parent dies, even by SIGKILL; a Ctrl-C reaches it through the parent only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import signal
import sys
import threading
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from pushcore.config import Settings
from pushcore.ports.stores import Store
from pushcore.runtime.parent import stop_with

if TYPE_CHECKING:
    from pushcore.delivery.webhooks import EventSender

log = logging.getLogger("pushcore.webhooks")

STOP_WITHIN = 2.0
"""Seconds the sender has to stop (its POSTs in flight cancelled) before SIGKILL."""

RESTART_AFTER = 1.0
"""Seconds between a sender process's unexpected end and its next start."""

CHECK_EVERY = 0.25
"""Seconds between two looks for a first endpoint (or attempt), before the sender starts:
the running sender's own idle look. A server started with endpoints starts its sender at
once; after the first endpoint is made, its first events wait at most this and the
child's start (about half a second) more than on a running sender. On an attempt
alone, it waited 1-1.5 s: an endpoint is made before its events, and starting then
kept the events' p99 under 1 s (docs/benchmarks.md). None is lost: the outbox keeps it."""

POOL_SIZE = 2  # the sender's database thread, and a spare for a PostgreSQL reconnect

NICENESS = 10
"""Added to the niceness of the sender's posting (its event loop's thread, and the threads
it starts): where the engine and the sender want the same core, the engine's deliveries
come first (the scheduler gives a nice-10 thread about a tenth of a contended core), and
the events, which have a second to arrive, take the time the engine leaves
(docs/benchmarks.md, "Event webhooks: beside the engine"). Not its database thread (see
:func:`_lower_posting_priority`)."""

Child = asyncio.subprocess.Process
_CHILD = f"from {__name__} import main; main()"


class EventProcess:
    """Runs the event sender in a child process for as long as :meth:`run` runs."""

    def __init__(self, settings: Settings, store: Store) -> None:
        self._settings = settings
        self._store = store
        self.pid: int | None = None  # the running child's
        self.starts = 0

    async def run(self) -> None:
        """Start the sender's process, start it again whenever it ends, until cancelled
        (then stop it)."""
        process: Child | None = None
        try:
            await self._until_work()
            while True:
                process = await self._start()
                code = await process.wait()
                log.warning(
                    "event sender process %s exited (%s): starting it again in %.0f s",
                    process.pid, code, RESTART_AFTER,
                )  # fmt: skip
                process = None
                await asyncio.sleep(RESTART_AFTER)
        finally:
            self.pid = None
            if process is not None:
                await _stop(process)

    async def _until_work(self) -> None:
        """Return once an endpoint exists or the outbox holds an attempt (due or not)."""
        while not await asyncio.to_thread(self._has_work):
            await asyncio.sleep(CHECK_EVERY)

    def _has_work(self) -> bool:
        try:
            with self._store.read() as tx:
                return tx.webhooks.any() or tx.events.next_due_at() is not None
        except Exception as error:  # a database away for a while: look again, as the sender would
            log.warning("looking for events to post failed: %s", error)
            return False

    async def _start(self) -> Child:
        # A new interpreter, not a fork: this process has threads and open connections.
        # Its settings come through stdin (a URL with a password stays off the command line).
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", _CHILD, str(os.getpid()), stdin=asyncio.subprocess.PIPE
        )
        assert process.stdin is not None
        process.stdin.write(pickle.dumps(self._settings))
        process.stdin.close()
        self.pid, self.starts = process.pid, self.starts + 1
        log.info("event sender started in process %s", process.pid)
        return process


async def _stop(process: Child) -> None:
    """SIGTERM, then SIGKILL once :data:`STOP_WITHIN` has passed."""
    with contextlib.suppress(ProcessLookupError):
        process.terminate()
    try:
        await asyncio.wait_for(asyncio.shield(process.wait()), STOP_WITHIN)
    except TimeoutError:
        log.warning("event sender process %s still running: killed", process.pid)
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
    except asyncio.CancelledError:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        raise


def serve_events(settings: Settings, parent: int) -> None:
    """The child's body: post events until SIGTERM (or the parent's end)."""
    stop_with(parent)
    # A terminal's Ctrl-C reaches the whole process group: the parent stops this one.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.basicConfig(
        level=settings.log_level.upper(), format="%(levelname)s:     %(name)s: %(message)s"
    )
    # Imported here, in the child: the engine's process does not need them for this.
    from pushcore.delivery.config import new_owner
    from pushcore.delivery.webhooks import EventSender
    from pushcore.outbound.guard import NetworkGuard, tls_context
    from pushcore.runtime.system import SystemClock
    from pushcore.storage import open_store

    store = open_store(settings.effective_database_url, POOL_SIZE)
    try:
        sender = EventSender(
            store,
            SystemClock(),
            NetworkGuard(allow_private=settings.allow_private_networks),
            new_owner(),
            # The system's roots are loaded at the first https endpoint's POST.
            tls=tls_context(settings.ca_file) if settings.ca_file is not None else None,
        )
        _lower_posting_priority(sender)
        asyncio.run(_until_terminated(sender.run()))
    finally:
        store.close()


def _lower_posting_priority(sender: EventSender) -> None:
    """:data:`NICENESS` added to this thread's niceness (and so to the threads it starts
    from now on), after the sender's database thread has started at the engine's.

    That thread holds the database's write lock through the sender's claims and records;
    on SQLite the engine's outcome records wait for that lock. Niced with the rest, it was
    preempted while holding it wherever the engine wanted the same core, and the engine
    then waited for a nice-10 thread's turn (beside the engine on a busy machine, the
    sender's write transactions held the lock 13-44 ms for about 4 ms of CPU each;
    docs/benchmarks.md). Linux keeps a niceness per thread; elsewhere the whole process
    is niced, as before. The database thread still needs the interpreter's lock, which a
    preempted posting thread may hold; sqlite3 lets it go while a statement runs, so that
    wait is for Python's share between statements, not for the whole transaction.
    """
    sender.start_thread()
    if sys.platform != "linux":
        os.nice(NICENESS)
        return
    thread = threading.get_native_id()
    os.setpriority(os.PRIO_PROCESS, thread, os.getpriority(os.PRIO_PROCESS, thread) + NICENESS)


async def _until_terminated(work: Coroutine[Any, Any, None]) -> None:
    task = asyncio.ensure_future(work)
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await task


def main() -> None:
    """The child's entry: its settings pickled on stdin, its parent's pid the argument."""
    serve_events(pickle.load(sys.stdin.buffer), int(sys.argv[1]))  # noqa: S301 (the parent's)
