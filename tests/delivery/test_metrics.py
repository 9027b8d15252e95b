"""What the engine reports to its metrics: one count per delivery outcome, timed sends."""

from __future__ import annotations

import asyncio

from pushcore.bootstrap import build_engine, build_metrics
from pushcore.delivery import DeliveryEngine
from pushcore.domain.model import Platform
from pushcore.domain.outcomes import Failed, Retry, TokenInvalid
from pushcore.domain.states import DeliveryStatus
from pushcore.metrics import Metrics
from pushcore.ports import Gateway
from tests.delivery.conftest import (
    CONFIG,
    DUE,
    LEASE,
    Harness,
    at,
    crash_while_sending,
    half,
    until,
)

IOS_TOKEN = "ab" * 32


def count(metrics: Metrics, platform: str, outcome: str) -> float | None:
    labels = {"platform": platform, "outcome": outcome}
    return metrics.registry.get_sample_value("pushcore_deliveries_total", labels)


def observed_engine(h: Harness, metrics: Metrics) -> DeliveryEngine:
    """The harness's engine set-up (3 attempts, pinned jitter), reporting to ``metrics``."""
    gateways: dict[Platform, Gateway] = dict.fromkeys(Platform, h.gateway)
    engine = DeliveryEngine(
        h.services.store, h.clock, gateways, CONFIG, "test", uniform=half, observer=metrics
    )
    h.engines.append(engine)
    return engine


def test_each_outcome_is_counted_under_the_device_platform(h: Harness) -> None:
    metrics = build_metrics(h.services)
    for token in ("tok-ok", "tok-failed", "tok-dead", "tok-busy"):
        h.device(token)
    h.device(IOS_TOKEN, platform="ios")
    h.gateway.script("tok-failed", Failed("MismatchSenderId"))
    h.gateway.script("tok-dead", TokenInvalid("Unregistered"))
    h.gateway.script("tok-busy", Retry("503"))
    h.notify()

    h.step(observed_engine(h, metrics), DUE)

    assert count(metrics, "android", "delivered") == 1.0
    assert count(metrics, "android", "failed") == 1.0
    assert count(metrics, "android", "token_invalid") == 1.0
    assert count(metrics, "android", "retry") == 1.0
    assert count(metrics, "ios", "delivered") == 1.0
    assert count(metrics, "ios", "failed") == 0.0
    assert count(metrics, "web", "delivered") == 0.0


def test_a_retry_on_the_last_attempt_is_counted_as_the_failure_it_was_recorded_as(
    h: Harness,
) -> None:
    metrics = build_metrics(h.services)
    h.device("tok-busy")
    h.gateway.script("tok-busy", Retry("503"), Retry("503"), Retry("503"))
    n = h.notify()
    engine = observed_engine(h, metrics)

    # Three attempts (CONFIG); pinned jitter waits 1.5 s, then 3 s.
    h.step(engine, DUE)
    h.step(engine, at(6.5))
    assert (count(metrics, "android", "retry"), count(metrics, "android", "failed")) == (2.0, 0.0)
    h.step(engine, at(9.5))

    assert len(h.gateway.for_token("tok-busy")) == 3
    assert h.delivery_statuses(n) == [DeliveryStatus.FAILED]
    assert (count(metrics, "android", "retry"), count(metrics, "android", "failed")) == (2.0, 1.0)


def test_the_composition_root_wires_counts_and_send_timing(h: Harness) -> None:
    metrics = build_metrics(h.services)
    h.device("tok-a")
    h.device("tok-b")
    h.device(IOS_TOKEN, platform="ios")
    gateways: dict[Platform, Gateway] = dict.fromkeys(Platform, h.gateway)
    engine = build_engine(h.services, gateways=gateways, owner="test", metrics=metrics)
    h.engines.append(engine)
    h.notify()

    h.step(engine, DUE)

    assert count(metrics, "android", "delivered") == 2.0
    assert count(metrics, "ios", "delivered") == 1.0
    sends = "pushcore_gateway_send_duration_seconds_count"
    # One send per platform of the batch: the engine groups dispatches by platform.
    assert metrics.registry.get_sample_value(sends, {"platform": "android"}) == 1.0
    assert metrics.registry.get_sample_value(sends, {"platform": "ios"}) == 1.0
    assert metrics.registry.get_sample_value(sends, {"platform": "web"}) is None


def test_timing_wraps_a_shared_gateway_once(h: Harness) -> None:
    metrics = build_metrics(h.services)
    timed = metrics.timed(dict.fromkeys(Platform, h.gateway))
    # One wrapper: the engine closes each distinct gateway once, as before.
    assert len({id(g) for g in timed.values()}) == 1
    assert set(timed) == set(Platform)


def engine_sample(
    metrics: Metrics, name: str, labels: dict[str, str] | None = None
) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def test_deliveries_in_flight_and_redeliveries_after_a_crash_are_reported(h: Harness) -> None:
    for token in ("tok-a", "tok-b", "tok-c"):
        h.device(token)
    h.notify()
    h.clock.set(DUE)
    crash_while_sending(h)  # another process sends all three and dies
    metrics = build_metrics(h.services)
    gateways: dict[Platform, Gateway] = dict.fromkeys(Platform, h.gateway)
    engine = build_engine(h.services, gateways=gateways, owner="test", metrics=metrics)
    h.engines.append(engine)
    assert engine_sample(metrics, "pushcore_engine_in_flight_deliveries") == 0.0
    assert engine_sample(metrics, "pushcore_redeliveries_total") == 0.0

    async def after_the_lease() -> None:
        h.gateway.hold()
        await engine.tick()
        await until(lambda: h.gateway.waiting == 1)
        assert engine_sample(metrics, "pushcore_engine_in_flight_deliveries") == 3.0
        h.gateway.let_go()
        await engine.drain()

    h.clock.set(DUE + LEASE)
    asyncio.run(after_the_lease())

    assert len(h.gateway.sent) == 3
    assert engine_sample(metrics, "pushcore_redeliveries_total") == 3.0
    assert engine_sample(metrics, "pushcore_engine_in_flight_deliveries") == 0.0


def test_each_answer_s_wait_for_its_record_is_a_histogram(h: Harness) -> None:
    for token in ("tok-a", "tok-b"):
        h.device(token)
    h.notify()
    metrics = build_metrics(h.services)
    engine = observed_engine(h, metrics)
    metrics.watch_engine(engine)
    assert engine_sample(metrics, "pushcore_engine_record_lag_seconds_count") == 0.0

    h.step(engine, DUE)

    assert len(h.gateway.sent) == 2
    assert engine_sample(metrics, "pushcore_engine_record_lag_seconds_count") == 2.0
    inf = engine_sample(metrics, "pushcore_engine_record_lag_seconds_bucket", {"le": "+Inf"})
    assert inf == 2.0
    assert (engine_sample(metrics, "pushcore_engine_record_lag_seconds_sum") or 0.0) > 0.0


def test_a_recorded_retry_is_not_a_redelivery(h: Harness) -> None:
    h.device("tok-busy")
    h.gateway.script("tok-busy", Retry("503"))
    h.notify()
    metrics = build_metrics(h.services)
    engine = observed_engine(h, metrics)
    metrics.watch_engine(engine)

    h.step(engine, DUE)
    h.step(engine, at(6.5))  # the second attempt, 1.5 s later

    assert [s.attempt for s in h.gateway.sent] == [1, 2]
    assert engine_sample(metrics, "pushcore_redeliveries_total") == 0.0
