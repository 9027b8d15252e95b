"""Prometheus metrics: one registry per app, fed by the HTTP adapter, the engine and the store.

Each :class:`Metrics` owns its own ``CollectorRegistry`` (never the process-wide
default), so several apps in one process, as in the tests, keep separate counts.
Nothing here imports Starlette: the HTTP adapter calls :meth:`Metrics.observe_request`.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Histogram, Info
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import choose_encoder
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

from pushcore.delivery.pace import LAG_BOUNDS, RecordLag
from pushcore.domain.model import Platform
from pushcore.domain.outcomes import Deferred, Delivered, Dispatch, Outcome, Retry, TokenInvalid
from pushcore.domain.retry import RetryPolicy
from pushcore.live import LiveHub
from pushcore.ports import Clock, EachGateway, Gateway, Store
from pushcore.ports.delivery import Ready
from pushcore.version import __version__

log = logging.getLogger("pushcore.metrics")

OUTCOMES = ("delivered", "retry", "token_invalid", "failed", "deferred")
"""The ``outcome`` label of ``pushcore_deliveries_total``."""

# Sends go out over the internet to Apple, Google and push services: slower
# and wider than the HTTP API's own latency, so buckets reach further.
GATEWAY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


def outcome_label(dispatch: Dispatch, outcome: Outcome, retry: RetryPolicy) -> str:
    """What the engine recorded for ``outcome``: a Retry on the last attempt is a failure."""
    if isinstance(outcome, Delivered):
        return "delivered"
    if isinstance(outcome, Retry):
        # The engine's own test (DeliveryEngine._record): no attempt is left.
        return "failed" if retry.gives_up(dispatch.delivery.attempts) else "retry"
    if isinstance(outcome, TokenInvalid):
        return "token_invalid"
    if isinstance(outcome, Deferred):
        return "deferred"  # not sent: its destination was busy; back in the queue
    return "failed"


class Metrics:
    """The service's metrics; a :class:`pushcore.ports.DeliveryObserver` for the engine."""

    def __init__(self, store: Store, clock: Clock, live: LiveHub | None = None) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.http_requests = Counter(
            "pushcore_http_requests",
            "HTTP requests answered, by method, route template and status code.",
            ["method", "route", "status"],
            registry=r,
        )
        self.http_seconds = Histogram(
            "pushcore_http_request_duration_seconds",
            "Time to answer an HTTP request, by method and route template.",
            ["method", "route"],
            registry=r,
        )
        self._request_children: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}
        self.deliveries = Counter(
            "pushcore_deliveries",
            "Deliveries handed to a gateway, by platform and the outcome recorded"
            " (deferred: not sent, the destination was busy, due again later).",
            ["platform", "outcome"],
            registry=r,
        )
        self.gateway_seconds = Histogram(
            "pushcore_gateway_send_duration_seconds",
            "Time of one gateway send (a batch of one platform's deliveries), by platform.",
            ["platform"],
            buckets=GATEWAY_BUCKETS,
            registry=r,
        )
        # Every series from the start: rate() and alerts see a 0, not an absence.
        for platform in Platform:
            for outcome in OUTCOMES:
                self.deliveries.labels(platform.value, outcome)
        Info("pushcore_build", "The running pushcore version.", registry=r).info(
            {"version": __version__}
        )
        ProcessCollector(registry=r)
        PlatformCollector(registry=r)
        GCCollector(registry=r)
        r.register(QueueCollector(store, clock))
        self._engine = EngineCollector()
        r.register(self._engine)
        if live is not None:
            r.register(LiveCollector(live))

    # -- HTTP ------------------------------------------------------------------

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        """Count one answered request."""
        # The labelled children kept: finding one by its labels costs more than the count.
        # Bounded: methods and routes are fixed sets (instrument.py), statuses a few dozen.
        children = self._request_children.get((method, route, status))
        if children is None:
            children = (
                self.http_requests.labels(method, route, str(status)),
                self.http_seconds.labels(method, route),
            )
            self._request_children[(method, route, status)] = children
        children[0].inc()
        children[1].observe(seconds)

    # -- delivery --------------------------------------------------------------

    def watch_engine(self, engine: EngineStats) -> None:
        """Report ``engine``'s deliveries in flight and redeliveries (this process's)."""
        self._engine.engine = engine

    def recorded(self, outcomes: Sequence[tuple[Dispatch, Outcome]], retry: RetryPolicy) -> None:
        """Count a recorded batch (the engine's DeliveryObserver call)."""
        counts = collections.Counter(
            (dispatch.device.platform.value, outcome_label(dispatch, outcome, retry))
            for dispatch, outcome in outcomes
        )
        for (platform, outcome), count in counts.items():
            self.deliveries.labels(platform, outcome).inc(count)

    def timed(self, gateways: Mapping[Platform, Gateway]) -> dict[Platform, Gateway]:
        """``gateways`` with each send timed; one wrapper per distinct gateway object,
        so the engine still closes each gateway once."""
        wrappers: dict[int, Gateway] = {}
        for gateway in gateways.values():
            if id(gateway) not in wrappers:
                timed = TimedEachGateway if isinstance(gateway, EachGateway) else TimedGateway
                wrappers[id(gateway)] = timed(gateway, self.gateway_seconds)
        return {platform: wrappers[id(gateway)] for platform, gateway in gateways.items()}

    # -- exposition ------------------------------------------------------------

    def exposition(self, accept: str | None) -> tuple[bytes, str]:
        """The scrape body and its content type: OpenMetrics when the scraper asks for
        it, else the Prometheus text format. Queries the store: call it off the loop."""
        encode, content_type = choose_encoder(accept or "")
        return encode(self.registry), content_type


class TimedGateway:
    """A gateway whose sends are timed into a histogram labelled by platform."""

    def __init__(self, inner: Gateway, seconds: Histogram) -> None:
        self._inner = inner
        self._seconds = seconds

    async def send(self, dispatches: Sequence[Dispatch]) -> Sequence[Outcome]:
        """The inner gateway's send, timed (a send that raises is timed too)."""
        start = time.perf_counter()
        try:
            return await self._inner.send(dispatches)
        finally:
            if dispatches:
                # The engine hands a gateway one platform's dispatches at a time.
                platform = dispatches[0].device.platform.value
                self._seconds.labels(platform).observe(time.perf_counter() - start)

    async def aclose(self) -> None:
        """Close the inner gateway."""
        await self._inner.aclose()


class TimedEachGateway(TimedGateway):
    """A gateway answering delivery by delivery, each answer timed on its own."""

    _inner: EachGateway

    def send_each(
        self, dispatches: Sequence[Dispatch], ready: Ready | None = None
    ) -> Sequence[asyncio.Future[Outcome]]:
        """The inner gateway's futures; the send is timed until its last answer (as a
        batch send is), one observation per send, not one per delivery."""
        start = time.perf_counter()
        answers = self._inner.send_each(dispatches, ready)
        if dispatches:
            seconds = self._seconds.labels(dispatches[0].device.platform.value)
            left = [len(answers)]

            def answered(_: object) -> None:
                left[0] -= 1
                if not left[0]:
                    seconds.observe(time.perf_counter() - start)

            for answer in answers:
                answer.add_done_callback(answered)
        return answers


class EngineStats(Protocol):
    """What the delivery engine of this process tells about itself."""

    @property
    def in_flight(self) -> int:
        """Deliveries claimed and not yet recorded or handed back."""
        ...

    @property
    def redelivered(self) -> int:
        """Claims of deliveries sent before whose answer was never recorded."""
        ...

    @property
    def record_lag(self) -> RecordLag:
        """How long gateway answers waited for their records."""
        ...


class EngineCollector:
    """This process's engine, read at scrape time (zeros until an engine is watched)."""

    def __init__(self) -> None:
        self.engine: EngineStats | None = None

    def describe(self) -> Iterable[Metric]:
        """The families (called at registration)."""
        return _engine_families()

    def collect(self) -> Iterable[Metric]:
        """The engine's numbers now."""
        in_flight, redelivered, lag = _engine_families()
        engine = self.engine
        in_flight.add_metric([], engine.in_flight if engine is not None else 0)
        redelivered.add_metric([], engine.redelivered if engine is not None else 0)
        waited = engine.record_lag if engine is not None else RecordLag()
        buckets, running = [], 0
        for bound, count in zip(
            (*(f"{b:g}" for b in LAG_BOUNDS), "+Inf"), waited.counts, strict=True
        ):
            running += count
            buckets.append((bound, running))
        lag.add_metric([], buckets, waited.total)
        return [in_flight, redelivered, lag]


def _engine_families() -> tuple[GaugeMetricFamily, CounterMetricFamily, HistogramMetricFamily]:
    return (
        GaugeMetricFamily(
            "pushcore_engine_in_flight_deliveries",
            "Deliveries this process has handed to gateways and not yet recorded: if it"
            " dies, at most these can arrive twice.",
        ),
        CounterMetricFamily(
            "pushcore_redeliveries",
            "Deliveries this process claimed again after a lease ran out with no answer"
            " recorded (sent before by a process that died or stalled: may arrive twice).",
        ),
        HistogramMetricFamily(
            "pushcore_engine_record_lag_seconds",
            "Time from each gateway answer to its record in the database: if this process"
            " dies, answers not yet recorded are sent again (API.md: within 100 ms).",
        ),
    )


class QueueCollector:
    """The queue's gauges, read from the database at scrape time.

    Computed when scraped rather than kept up to date in memory: the queue is
    shared by every process on the database, so only the database knows it.
    Every process reports the same values; aggregate them with max, not sum.
    """

    def __init__(self, store: Store, clock: Clock) -> None:
        self._store = store
        self._clock = clock

    def describe(self) -> Iterable[Metric]:
        """The families, without reading the database (called at registration)."""
        return _queue_families()

    def collect(self) -> Iterable[Metric]:
        """The gauges now; when the database cannot be read, only
        ``pushcore_database_up 0``, so the scrape still reports everything else."""
        up, *gauges = _queue_families()
        try:
            now = self._clock.now()
            with self._store.read() as tx:
                depth = tx.deliveries.queue_depth(now)
        except Exception:
            log.warning("metrics: cannot read the queue", exc_info=True)
            up.add_metric([], 0)
            return [up]
        up.add_metric([], 1)
        oldest = depth.oldest_due_at
        lag = 0.0 if oldest is None else max(0.0, (now - oldest).total_seconds())
        for gauge, value in zip(
            gauges, (depth.pending, depth.due, depth.in_flight, lag), strict=True
        ):
            gauge.add_metric([], value)
        return [up, *gauges]


def _queue_families() -> list[GaugeMetricFamily]:
    return [
        GaugeMetricFamily(
            "pushcore_database_up", "Whether the database answered this scrape (1) or not (0)."
        ),
        GaugeMetricFamily(
            "pushcore_queue_pending_deliveries",
            "Deliveries waiting to be sent (PENDING), due now or later, in every account.",
        ),
        GaugeMetricFamily(
            "pushcore_queue_due_deliveries",
            "PENDING deliveries whose due time has come: work not yet claimed.",
        ),
        GaugeMetricFamily(
            "pushcore_queue_in_flight_deliveries",
            "Deliveries leased to an engine and being sent (IN_FLIGHT).",
        ),
        GaugeMetricFamily(
            "pushcore_queue_oldest_due_age_seconds",
            "How long the most overdue PENDING delivery has been due (0 when none is).",
        ),
    ]


class LiveCollector:
    """This process's live channels (GET /api/inbox/events), read at scrape time."""

    def __init__(self, hub: LiveHub) -> None:
        self._hub = hub

    def describe(self) -> Iterable[Metric]:
        """The families (called at registration)."""
        return self.collect()

    def collect(self) -> Iterable[Metric]:
        """The hub's numbers now."""
        stats = self._hub.stats
        counters = (
            ("pushcore_live_events", "Events sent on live channels.", stats.events),
            (
                "pushcore_live_replays",
                "Live channels that resumed from an id and replayed entries.",
                stats.replays,
            ),
            ("pushcore_live_replayed_entries", "Entries sent by those replays.", stats.replayed),
            (
                "pushcore_live_slow_closes",
                "Live channels closed because their client did not keep up (it resumes by id).",
                stats.slow,
            ),
            (
                "pushcore_live_bound_closes",
                "Live channels closed, the longest idle, for a new one at the process's bound.",
                stats.bound,
            ),
        )
        return [
            GaugeMetricFamily(
                "pushcore_live_channels",
                "Live channels open in this process.",
                value=self._hub.open_channels,
            ),
            *(CounterMetricFamily(name, text, value=value) for name, text, value in counters),
        ]
