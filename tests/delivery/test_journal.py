"""What the engine tells an operator: heartbeats in the database, and a log line for each
retry, permanent failure and deactivation (never a device's token or URL)."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from pushcore.domain.outcomes import Failed, Retry, TokenInvalid
from tests.delivery.conftest import DUE, T0, Harness, at

# A device token (or webhook URL) is a secret of its user: it must never reach the log.
SECRET = "fcm-s3cr3t-registration-token"


def _lines(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "pushcore.delivery" and r.levelno == level
    ]


def test_an_engine_beats_in_the_database_while_it_claims(h: Harness) -> None:
    engine = h.engine("engine-a")
    assert not h.services.engine_seen_since(timedelta(seconds=10))

    h.step(engine, T0)
    with h.services.store.read() as tx:
        assert tx.engines.last_seen() == T0
    assert h.services.engine_seen_since(timedelta(seconds=10))

    # Beats are a few seconds apart, not one per claim...
    h.step(engine, at(1))
    with h.services.store.read() as tx:
        assert tx.engines.last_seen() == T0
    # ...and an engine that stopped claiming is noticed once 10 s have passed.
    h.clock.set(at(11))
    assert not h.services.engine_seen_since(timedelta(seconds=10))
    h.step(engine, at(12))
    assert h.services.engine_seen_since(timedelta(seconds=10))


def test_each_retry_failure_and_deactivation_is_one_log_line(
    h: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="pushcore.delivery")
    retried = h.device(SECRET)
    refused = h.device("tok-refused")
    dead = h.device("tok-dead")
    h.gateway.script(SECRET, Retry("Service Unavailable"))
    h.gateway.script("tok-refused", Failed("InvalidArgument"))
    h.gateway.script("tok-dead", TokenInvalid("Unregistered"))
    n = h.notify()

    h.step(h.engine(), DUE)

    infos = _lines(caplog, logging.INFO)
    warnings = _lines(caplog, logging.WARNING)
    retry_lines = [line for line in infos if line.startswith("retry ")]
    assert retry_lines == [
        f"retry notification {n.id} device {retried.id} (android) after attempt 1"
        " in 1.5 s: Service Unavailable"
    ]
    assert (
        f"failed notification {n.id} device {refused.id} (android) after attempt 1: InvalidArgument"
    ) in warnings
    assert (
        f"failed notification {n.id} device {dead.id} (android) after attempt 1: Unregistered"
    ) in warnings
    assert f"deactivated device {dead.id} (android): Unregistered, answering {n.id}" in warnings
    assert len(warnings) == 3
    everything = "\n".join(r.getMessage() for r in caplog.records)
    assert SECRET not in everything
    assert "tok-dead" not in everything
    assert "tok-refused" not in everything
