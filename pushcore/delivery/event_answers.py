"""What the endpoints' answers decide (delivery/webhooks.py): each attempt's state after
its try, and the endpoints to disable. Pure but for the log line of a disabling."""

from __future__ import annotations

import logging
from datetime import datetime

import attrs

from pushcore.domain.events import (
    Attempt,
    AttemptResult,
    AttemptStatus,
    WebhookEndpoint,
    gives_up,
    next_attempt_delay,
)

log = logging.getLogger("pushcore.webhooks")
GONE = "The endpoint answered 410 Gone"
GAVE_UP = "No successful answer for 3 days"

Answered = tuple[Attempt, WebhookEndpoint, AttemptResult]
Decided = tuple[WebhookEndpoint, Attempt, str | None]


def decide_all(answered: list[Answered], now: datetime) -> list[Decided]:
    """Each answered attempt's endpoint, the attempt after its try, and why its endpoint
    is to be disabled (if it is)."""
    return [(endpoint, *decide(attempt, result, now)) for attempt, endpoint, result in answered]


def say_disabled(disabled: list[tuple[str, str]]) -> None:
    """Log each endpoint disabled (its id, and why), once its transaction committed."""
    for endpoint_id, reason in disabled:
        log.warning("webhook endpoint %s disabled: %s", endpoint_id, reason)


def decide(attempt: Attempt, result: AttemptResult, now: datetime) -> tuple[Attempt, str | None]:
    """The attempt after this try, and why its endpoint is to be disabled (if it is)."""
    tries = attempt.attempts + 1
    status, due, disable = attempt.status, None, None
    if result.ok:
        status = AttemptStatus.SUCCEEDED
    elif result.gone:
        status, disable = AttemptStatus.FAILED, GONE
    else:
        due = now + next_attempt_delay(tries, result.retry_after)
        if gives_up(attempt.created_at, due):
            status, due, disable = AttemptStatus.FAILED, None, GAVE_UP
    tried = attrs.evolve(
        attempt,
        status=status,
        attempts=tries,
        attempted_at=now,
        response_status=result.status,
        duration_ms=result.duration_ms,
        next_attempt_at=due,
    )
    return tried, disable
