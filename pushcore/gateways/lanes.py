"""Fair shares of a gateway's connections, by destination host and by receiving account.

Webhook and Web Push URLs are chosen by the accounts, so one account's dead
or slow receiver must not take what every other account's deliveries need.
Each delivery goes through three lanes, each a limit on requests at once:
its host's, its receiving account's (the device's owner, a stream's
subscriber) and the gateway's. A host's limit adapts (AIMD):
halved by every timeout or connection failure, grown by one with every
answer, so a host that hangs is soon down to one request at a time, and one
that recovers is back to its full share after a few answers.

Nothing waits long in memory. A delivery is admitted only when its lanes are
expected to take it within ``max_wait`` (the lane's queue over its limit,
times the answer time it has seen); otherwise, and when a slot does not come
within ``max_wait``, it is *deferred*: handed back to the database unsent,
due again when the lane should have room, its attempt not counted. So the
engine's in-flight capacity holds only what is being sent or about to be,
and due work of other accounts and hosts is taken up on time.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import random
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from urllib.parse import urlsplit

from pushcore.domain.outcomes import Deferred, Dispatch, Outcome, Retry
from pushcore.ports.delivery import Ready

# Answer time assumed, for admitting, of a host not heard from yet: a first
# burst to a new host admits about max_wait / UNKNOWN_LATENCY rounds of its
# limit, and what it defers comes back after MIN_DEFER, when its pace is known.
UNKNOWN_LATENCY = 1.0
# The share of a new answer time in a lane's moving average.
SMOOTHING = 0.2
# A deferral waits at least this long and at most MAX_DEFER (the lane's backlog
# may be far longer: it is looked at again then).
MIN_DEFER = 1.0
MAX_DEFER = 120.0
# Lanes kept in memory before idle ones are forgotten.
REMEMBERED = 10_000


class Lane:
    """Up to ``limit`` requests at once; waiting ones are let in first come, first served."""

    def __init__(self, limit: int, *, adaptive: bool = False) -> None:
        self.ceiling = limit
        self.limit = limit
        self._adaptive = adaptive
        self.running = 0
        self.admitted = 0  # admitted and not yet running
        # Deferred and not seen to start since: where the next deferral queues up.
        self.deferred = 0
        self._waiting: deque[asyncio.Future[None]] = deque()
        self.latency: float | None = None
        # When the lane last saw an answer (or began work while idle): with
        # requests running and no answer since, each takes at least that long.
        self._progress_at = 0.0

    def pace(self, now: float) -> float | None:
        """Seconds one request takes here: the moving average of answer times, or
        longer while the running ones have gone that long unanswered (a second or
        more); None unknown."""
        stalled = now - self._progress_at if self.running else 0.0
        if stalled < UNKNOWN_LATENCY:
            # Shorter unanswered times say as much of this process's event loop as of
            # the host: thousands handed at one instant keep the loop from reading the
            # first answers for a while, and that wait, taken for the host's pace,
            # deferred the rest of the burst by tens of seconds.
            stalled = 0.0
        if self.latency is None and stalled <= 0:
            return None
        return max(self.latency or 0.0, stalled)

    @property
    def idle(self) -> bool:
        """Nothing running, admitted or waiting: the lane can be forgotten."""
        return self.running == 0 and self.admitted == 0 and not self._waiting

    def expected_wait(self, now: float, *, deferred: bool = False) -> float | None:
        """Seconds until one more delivery would start, from the queue and the pace;
        with ``deferred``, behind those deferred before it too. None: the pace is not
        known yet (and there is a queue)."""
        ahead = self.admitted + self.running - self.limit + 1
        if deferred:
            ahead += self.deferred
        if ahead <= 0:
            return 0.0
        pace = self.pace(now)
        return None if pace is None else ahead / self.limit * pace

    async def enter(self, timeout: float) -> bool:
        """Take a slot within ``timeout`` seconds; False when none came."""
        if self.running < self.limit and not self._waiting:
            self._started()
            return True
        future = asyncio.get_running_loop().create_future()
        self._waiting.append(future)
        try:
            async with asyncio.timeout(timeout):
                await future
        except (TimeoutError, asyncio.CancelledError) as stop:
            if future.done() and not future.cancelled():
                # The slot came as the time ran out (it is ours) or as we were
                # cancelled (it goes to the next one).
                if isinstance(stop, TimeoutError):
                    return True
                self.leave()
            else:
                with contextlib.suppress(ValueError):
                    self._waiting.remove(future)
            if isinstance(stop, TimeoutError):
                return False
            raise
        return True

    def leave(self) -> None:
        """Give a slot back; let the next waiting one in."""
        self.running -= 1
        self._let_in()

    def observe(self, seconds: float, now: float, *, failed: bool) -> None:
        """An answer (or a failure to get one) after ``seconds``: adapt the limit."""
        self._progress_at = now
        self.latency = (
            seconds if self.latency is None else self.latency + SMOOTHING * (seconds - self.latency)
        )
        if not self._adaptive:
            return
        if failed:
            self.limit = max(1, self.limit // 2)
        elif self.limit < self.ceiling:
            self.limit += 1
            self._let_in()

    def _let_in(self) -> None:
        while self._waiting and self.running < self.limit:
            future = self._waiting.popleft()
            if not future.done():
                self._started()
                future.set_result(None)

    def _started(self) -> None:
        if self.running == 0:
            self._progress_at = asyncio.get_running_loop().time()
        self.running += 1
        # Most likely one that was deferred before, back now.
        self.deferred = max(0, self.deferred - 1)


class Lanes:
    """The lanes of one gateway: per host (adaptive), per account, and in all.

    ``unreachable`` are the gateway's Retry reasons that say the host did not
    answer (a timeout, a refused connection): each halves the host's limit.
    """

    def __init__(
        self,
        *,
        concurrency: int,
        host_concurrency: int,
        account_concurrency: int,
        unreachable: frozenset[str],
        max_wait: float = 5.0,
        uniform: Callable[[], float] = random.random,
    ) -> None:
        self._host_limit = host_concurrency
        self._account_limit = account_concurrency
        self._all = Lane(concurrency)
        self._hosts: dict[str, Lane] = {}
        self._accounts: dict[str, Lane] = {}
        self.max_wait = max_wait
        self._uniform = uniform
        self._unreachable = unreachable

    def send_each(
        self,
        dispatches: Sequence[Dispatch],
        send: Callable[[Dispatch], Awaitable[Outcome]],
        ready: Ready | None = None,
    ) -> list[asyncio.Future[Outcome]]:
        """Start ``send`` for each dispatch its lanes admit; defer the others at once.
        Each awaits ``ready``, when given, once it holds its slots and before it sends."""
        loop = asyncio.get_running_loop()
        answers: list[asyncio.Future[Outcome]] = []
        for dispatch in dispatches:
            host = self._lane(self._hosts, host_of(dispatch.device.token), self._host_limit, True)
            # The receiving account's lane, not the sender's: a stream send reaches
            # many subscribers, and one subscriber's dead endpoints must hold only
            # that subscriber's share (API.md, People-side limits).
            account = self._lane(
                self._accounts, dispatch.device.account_id, self._account_limit, False
            )
            now = loop.time()
            waits = [lane.expected_wait(now) for lane in (host, account)]
            if max(UNKNOWN_LATENCY if w is None else w for w in waits) > self.max_wait:
                answer = loop.create_future()
                answer.set_result(self._defer(host, account, now))
            else:
                host.admitted += 1
                account.admitted += 1
                answer = asyncio.ensure_future(self._send(dispatch, host, account, send, ready))
            answers.append(answer)
        return answers

    async def _send(
        self,
        dispatch: Dispatch,
        host: Lane,
        account: Lane,
        send: Callable[[Dispatch], Awaitable[Outcome]],
        ready: Ready | None,
    ) -> Outcome:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.max_wait
        # Host first: waiting on a busy host must not hold one of the account's slots.
        admitted, held = [host, account], []
        try:
            for lane in (host, account, self._all):
                if lane is not self._all:
                    admitted.remove(lane)
                    lane.admitted -= 1
                if not await lane.enter(max(0.0, deadline - loop.time())):
                    # It was ahead of what was deferred meanwhile: due again before those.
                    return self._defer(host, account, loop.time(), behind_deferred=False)
                held.append(lane)
            if ready is not None:
                await ready()  # not the host's time: not timed, not counted against it
            started = loop.time()
            try:
                outcome = await send(dispatch)
            except Exception:
                host.observe(loop.time() - started, loop.time(), failed=True)
                raise
            now = loop.time()
            failed = isinstance(outcome, Retry) and outcome.reason in self._unreachable
            host.observe(now - started, now, failed=failed)
            account.observe(now - started, now, failed=False)
            return outcome
        finally:
            # Also when cancelled (the engine stopping): every count given back.
            for lane in admitted:
                lane.admitted -= 1
            for lane in held:
                lane.leave()

    def _defer(
        self, host: Lane, account: Lane, now: float, *, behind_deferred: bool = True
    ) -> Deferred:
        # Due again about when the busier lane should reach it, behind what it
        # deferred before (capped: it is looked at again then); at once (after
        # MIN_DEFER) while its pace is unknown: it will be known by then.
        waits = [(lane.expected_wait(now) or 0.0, lane) for lane in (host, account)]
        lane = max(waits, key=lambda pair: pair[0])[1]
        wait = lane.expected_wait(now, deferred=behind_deferred) or 0.0
        lane.deferred += 1
        after = min(MAX_DEFER, max(MIN_DEFER, wait))
        # Spread: a backlog deferred together does not come back together.
        return Deferred("Destination busy", after * (0.75 + 0.5 * self._uniform()))

    @staticmethod
    def _lane(lanes: dict[str, Lane], key: str, limit: int, adaptive: bool) -> Lane:
        lane = lanes.get(key)
        if lane is None:
            if len(lanes) >= REMEMBERED:
                # Idle lanes are kept (a host's pace and limit tell how to take its
                # next burst) until there are this many; then the idle are forgotten.
                for idle in [k for k, v in lanes.items() if v.idle]:
                    del lanes[idle]
            lane = lanes[key] = Lane(limit, adaptive=adaptive)
        return lane


@functools.lru_cache(maxsize=4096)  # a pure function; parsed for every dispatch
def host_of(url: str) -> str:
    """The destination a URL names: scheme, host and port, lowercase."""
    try:
        parts = urlsplit(url)
        return f"{parts.scheme}://{(parts.hostname or '').lower()}:{parts.port or ''}"
    except ValueError:
        return url
