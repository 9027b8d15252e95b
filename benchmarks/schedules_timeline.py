"""What the engine's process was doing when a delivery was late (benchmarks/schedules.py).

Spans on the benchmark's clock: each materialiser pass (``Maker.make_due``, in its
thread), each claim of the engine (with what it claimed), each collection of the
cycle collector. A late delivery is then explained by what overlapped the time
between its claim's due window and its arrival at the gateway.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from benchmarks.localtime import JumpingClock, NotingGateway
from pushcore.domain.outcomes import Dispatch, Outcome

# The engine claims this long before a due time (its default lead): work in this
# window delays the claim a due delivery waits for.
CLAIM_WINDOW = timedelta(milliseconds=20)
# Passes shown beside a late delivery: those that began this close to its due time.
NEAR = timedelta(seconds=2)


def _ms(span: timedelta) -> float:
    return span.total_seconds() * 1000


class IdGateway(NotingGateway):
    """The noting gateway that also notes each delivery's id."""

    def __init__(self, clock: JumpingClock) -> None:
        super().__init__(clock)
        self.ids: list[str] = []

    async def send(self, dispatches: Any) -> Any:
        """As NotingGateway, each delivery's id noted in the same order."""
        self.ids += [d.delivery.id for d in dispatches]
        outcomes: list[Outcome] = list(await super().send(dispatches))
        return outcomes


@dataclass
class Timeline:
    """Spans of the process's work, on the benchmark's clock."""

    clock: JumpingClock
    passes: list[tuple[datetime, datetime, int]] = field(default_factory=list)
    claims: list[tuple[datetime, datetime]] = field(default_factory=list)
    claimed_at: dict[str, tuple[datetime, datetime]] = field(default_factory=dict)
    # Per claim (by its start): its transactions' names and ms, in order.
    phases: dict[datetime, list[tuple[str, float]]] = field(default_factory=dict)
    _local: threading.local = field(default_factory=threading.local)
    # The loop's own heartbeats (before a tick; a claim's own beat is inside its span).
    beats: list[tuple[datetime, datetime]] = field(default_factory=list)
    collections: list[tuple[datetime, datetime, int]] = field(default_factory=list)
    _gc_began: datetime | None = None

    def watch_passes(self, maker: Any) -> None:
        """Note each of the maker's passes (start, end, notifications made)."""
        make_due: Callable[[], tuple[int, bool]] = maker.make_due

        @functools.wraps(make_due)
        def timed() -> tuple[int, bool]:
            began = self.clock.now()
            made, more = make_due()
            self.passes.append((began, self.clock.now(), made))
            return made, more

        maker.make_due = timed

    def watch_claims(self, engine: Any) -> None:
        """Note each claim of the engine and, per delivery, the claim that took it."""
        ledger = engine._ledger  # read only: the same calls, timed
        claim = ledger.claim
        ledger._store = _TimedStore(ledger._store, self._local)

        @functools.wraps(claim)
        def timed(*args: Any, **kwargs: Any) -> Any:
            began = self.clock.now()
            phases: list[tuple[str, float]] = []
            self._local.phases = phases
            try:
                found = claim(*args, **kwargs)
            finally:
                self._local.phases = None
            span = (began, self.clock.now())
            self.phases[began] = phases
            self.claims.append(span)
            dispatches: list[Dispatch] = list(found.dispatches)
            for dispatch in dispatches:
                self.claimed_at[dispatch.delivery.id] = span
            return found

        ledger.claim = timed
        beat = ledger.beat

        @functools.wraps(beat)
        def beating(*args: Any, **kwargs: Any) -> Any:
            began = self.clock.now()
            try:
                return beat(*args, **kwargs)
            finally:
                self.beats.append((began, self.clock.now()))

        ledger.beat = beating

    def watch_collections(self) -> Callable[[], None]:
        """Note each collection; the callable that stops noting."""

        def noted(phase: str, info: dict[str, Any]) -> None:
            if phase == "start":
                self._gc_began = self.clock.now()
            elif self._gc_began is not None:
                self.collections.append((self._gc_began, self.clock.now(), info["generation"]))
                self._gc_began = None

        gc.callbacks.append(noted)
        return lambda: gc.callbacks.remove(noted)

    def causes(self, delivery_id: str, due: datetime, arrived: datetime) -> list[str]:
        """What overlapped the delivery's wait (from its claim's window to its arrival)."""
        began = due - CLAIM_WINDOW
        found: list[str] = []
        claim = self.claimed_at.get(delivery_id)
        if claim is not None and claim[1] > due:
            found.append("claimed after due")
        for start, end, made in self.passes:
            if start < arrived and end > began and made:
                found.append("materialiser pass")
                break
        else:
            if any(s < arrived and e > began for s, e, _ in self.passes):
                found.append("idle pass")
        gens = sorted({g for s, e, g in self.collections if s < arrived and e > began})
        found += [f"gc gen {g}" for g in gens]
        return found or ["nothing noted"]

    def report(
        self,
        gateway: IdGateway,
        kinds: dict[str, str],
        slow_ms: float,
        windows: dict[str, tuple[datetime, datetime]],
    ) -> str:
        """The late ones (due within their kind's window) with their causes per kind, the worst ten,
        and where passes ran."""
        lines: list[str] = []
        rows = zip(gateway.ids, gateway.arrived, strict=True)
        late: dict[str, list[tuple[float, str, datetime, list[str]]]] = {}
        for delivery_id, (device, due, arrived) in rows:
            ms = (arrived - due).total_seconds() * 1000
            window = windows.get(kinds.get(device, ""))
            if window is not None and ms > slow_ms and window[0] < due <= window[1]:
                causes = self.causes(delivery_id, due, arrived)
                late.setdefault(kinds[device], []).append((ms, delivery_id, due, causes))
        for kind, found in sorted(late.items()):
            counted = Counter(c for *_, causes in found for c in causes)
            summary = ", ".join(f"{c}: {n}" for c, n in counted.most_common())
            bursts = len({due for _, _, due, _ in found})
            lines.append(
                f"{kind}: {len(found)} over {slow_ms:g} ms, {bursts} due instants; {summary}"
            )
            for ms, _, due, causes in sorted(found, reverse=True)[:3]:
                near = [(s, e) for s, e, made in self.passes if made and abs(s - due) < NEAR]
                passes = " ".join(f"{_ms(s - due):+.0f}..{_ms(e - due):+.0f}" for s, e in near)
                where = f"; passes (ms from due) {passes}" if passes else ""
                lines.append(
                    f"  {ms:7.1f} ms, due :{due.second:02d}.{due.microsecond // 1000:03d},"
                    f" {', '.join(causes)}{where}"
                )
        lines += self.instants(gateway, kinds, windows)
        working = [p for p in self.passes if p[2]]
        if working:
            phases = sorted(s.microsecond / 1000 for s, _, _ in working)
            walls = sorted(_ms(e - s) for s, e, _ in working)
            tenth = len(phases) // 10
            lines.append(
                f"passes that made something: {len(working)}; start, ms past the second:"
                f" p10 {phases[tenth]:.0f}, p50 {phases[len(phases) // 2]:.0f},"
                f" p90 {phases[-1 - tenth]:.0f}; wall ms: median {walls[len(walls) // 2]:.1f},"
                f" max {walls[-1]:.1f}; collections: {len(self.collections)}"
            )
        return "\n".join(lines)

    def instants(
        self,
        gateway: IdGateway,
        kinds: dict[str, str],
        windows: dict[str, tuple[datetime, datetime]],
    ) -> list[str]:
        """Per kind, every due instant: its worst lateness and the claim that took it
        (began how long before due, how long it took, its transactions' ms)."""
        worst: dict[tuple[str, datetime], tuple[float, str]] = {}
        for delivery_id, (device, due, arrived) in zip(gateway.ids, gateway.arrived, strict=True):
            window = windows.get(kinds.get(device, ""))
            if window is not None and window[0] < due <= window[1]:
                ms = _ms(arrived - due)
                key = (kinds[device], due)
                if key not in worst or worst[key][0] < ms:
                    worst[key] = (ms, delivery_id)
        lines: list[str] = []
        for kind in sorted(set(kinds.values())):
            rows = sorted((due, v) for (k, due), v in worst.items() if k == kind)
            claims = [(at, c) for at, (_, i) in rows if (c := self.claimed_at.get(i)) is not None]
            after = sum(1 for at, c in claims if c[1] > at)
            # A claim that began late (less than half the lead before due): the loop or
            # the claim thread was busy with something else when the wake-up came.
            began_late = sum(1 for at, c in claims if at - c[0] < CLAIM_WINDOW / 2)
            took = sorted(_ms(c[1] - c[0]) for _, c in claims) or [0.0]
            lines.append(
                f"{kind}: {len(rows)} instants, {after} claimed after due, {began_late} claims"
                f" began late; claim ms median {took[len(took) // 2]:.1f}, max {took[-1]:.1f}:"
            )
            for due, (ms, delivery_id) in rows:
                claim = self.claimed_at.get(delivery_id)
                if claim is None:
                    continue
                steps = " ".join(f"{n} {t:.1f}" for n, t in self.phases.get(claim[0], []))
                # The claim before it (an idle tick's, or the last instant's): whether the
                # loop was still in it when this one's wake-up came.
                before = [c for c in self.claims if c[0] < claim[0]]
                last = ""
                if before:
                    start, end = (_ms(at - due) for at in before[-1])
                    last = f"; claim before: {start:+.0f}..{end:+.0f}"
                beats = [b for b in self.beats if before and before[-1][1] <= b[0] < claim[0]]
                if beats:
                    last += f"; beat {_ms(beats[-1][0] - due):+.0f}..{_ms(beats[-1][1] - due):+.0f}"
                lines.append(
                    f"  due {due:%H:%M:%S.%f} worst {ms:6.1f} ms; claim began"
                    f" {_ms(due - claim[0]):6.1f} ms before, took {_ms(claim[1] - claim[0]):5.1f}"
                    f" ({steps}){last}"
                )
        return lines


class _TimedStore:
    """The store with each transaction or read of a timed claim noted (its ms)."""

    def __init__(self, store: Any, local: threading.local) -> None:
        self._store = store
        self._local = local

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    @contextlib.contextmanager
    def _noted(self, name: str, opened: Any) -> Iterator[Any]:
        began = time.perf_counter()
        with opened as tx:
            yield tx
        phases = getattr(self._local, "phases", None)
        if phases is not None:
            phases.append((name, (time.perf_counter() - began) * 1000))

    def transaction(self, **kwargs: Any) -> Any:
        """The store's, noted."""
        return self._noted("tx", self._store.transaction(**kwargs))

    def read(self) -> Any:
        """The store's, noted."""
        return self._noted("read", self._store.read())
