"""Password hashing: argon2id, run off the event loop by a pool of bounded size.

A hash costs tens of milliseconds of one core on purpose. So a sign-in never
hashes on the event loop, and sign-ins hash on a pool of their own that leaves
a core to everything else: a flood of sign-ins waits its turn there instead of
taking the threads and cores other accounts' requests need.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import secrets
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

from pushcore.domain.errors import RateLimited

if TYPE_CHECKING:
    # Imported by the first hash or check: a command that signs nobody in (a local
    # pushctl send) loads no argon2.
    from argon2 import PasswordHasher

T = TypeVar("T")

# OWASP's argon2id floor (19 MiB, 2 passes, 1 lane): about 20 ms of one core. One
# lane, so that a hash takes one thread and the pool's size bounds the cores in use.
TIME_COST = 2
MEMORY_COST_KIB = 19 * 1024
PARALLELISM = 1
# Hashes waiting for the pool, per worker, past which a sign-in is refused (429)
# rather than queued: about 5 s of hashing each.
WAITING_PER_WORKER = 256


# The niceness of the hashing threads (Linux sets it per thread): where a hash and the
# event loop want the same core, the loop gets nearly all of it, so a flood of sign-ins
# slows sign-ins, not the rest. Measured with 200 sign-ins in flight on 2 shared cores.
HASHING_NICENESS = 10


def _lower_priority() -> None:
    # Not on every platform: a nicety, not a need.
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), HASHING_NICENESS)


def default_workers() -> int:
    """One thread per core the process may use, less one left to the event loop."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        cores = os.cpu_count() or 2
    return max(1, cores - 1)


class PasswordHashing:
    """Hashes and checks passwords (argon2id); the ``*_async`` calls run on the pool."""

    def __init__(self, hasher: PasswordHasher | None = None, workers: int | None = None) -> None:
        self._given = hasher
        self.workers = workers or default_workers()
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._waiting = 0
        self._dummy: str | None = None

    @functools.cached_property
    def _hasher(self) -> PasswordHasher:
        from argon2 import PasswordHasher

        return self._given or PasswordHasher(
            time_cost=TIME_COST, memory_cost=MEMORY_COST_KIB, parallelism=PARALLELISM
        )

    def hash(self, password: str) -> str:
        """The argon2id hash of ``password`` (salted: two hashes of one password differ)."""
        return self._hasher.hash(password)

    def verify(self, stored: str | None, password: str) -> bool:
        """Whether ``password`` matches ``stored``. With no stored hash (no such account,
        or one without a password) a dummy hash is checked, so that both take as long."""
        from argon2.exceptions import InvalidHashError, VerificationError

        try:
            return self._hasher.verify(stored or self._dummy_hash(), password) and bool(stored)
        except (VerificationError, InvalidHashError):
            return False

    def needs_rehash(self, stored: str) -> bool:
        """Whether ``stored`` was made with other parameters than today's."""
        return self._hasher.check_needs_rehash(stored)

    async def hash_async(self, password: str) -> str:
        """:meth:`hash` on the pool."""
        return await self._run(self.hash, password)

    async def verify_async(self, stored: str | None, password: str) -> bool:
        """:meth:`verify` on the pool."""
        return await self._run(self.verify, stored, password)

    def close(self) -> None:
        """Stop the pool (hashes under way finish)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def _dummy_hash(self) -> str:
        # Made once, with today's parameters, of a password nobody knows.
        if self._dummy is None:
            self._dummy = self._hasher.hash(secrets.token_urlsafe(16))
        return self._dummy

    async def _run(self, fn: Callable[..., T], *args: object) -> T:
        with self._lock:
            if self._waiting >= self.workers * WAITING_PER_WORKER:
                raise RateLimited("Too many sign-ins at once; try again shortly", 1)
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    self.workers, thread_name_prefix="pushcore-hash", initializer=_lower_priority
                )
            self._waiting += 1
            pool = self._pool
        try:
            # wrap_future, not a loop's executor: the services outlive any one event loop.
            return await asyncio.wrap_future(pool.submit(fn, *args))
        finally:
            with self._lock:
                self._waiting -= 1
