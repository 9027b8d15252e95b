"""The engine's log of what went wrong with a delivery, for operators.

One line per retry, permanent failure and device deactivation, naming the
notification, device, platform and reason, so that "nothing arrived" can be
answered from the log. Never the device's token or webhook URL: those are the
user's secrets, and a log travels further than the database.
"""

from __future__ import annotations

import logging

from pushcore.domain.outcomes import Deferred, Dispatch, Outcome, Retry

log = logging.getLogger("pushcore.delivery")


def _who(dispatch: Dispatch) -> str:
    """`notification ntf_… device dev_… (platform)`."""
    return (
        f"notification {dispatch.notification.id} device {dispatch.device.id}"
        f" ({dispatch.device.platform.value})"
    )


def say_retry(dispatch: Dispatch, outcome: Outcome, delay: float) -> None:
    """INFO: the delivery is tried again in ``delay`` seconds."""
    assert isinstance(outcome, Retry)
    log.info(
        "retry %s after attempt %d in %.1f s: %s",
        _who(dispatch),
        dispatch.delivery.attempts,
        delay,
        outcome.reason,
    )


def say_deferred(dispatch: Dispatch, outcome: Deferred) -> None:
    """DEBUG: not sent, its destination is busy; back in the queue (a dead host's
    backlog is deferred over and over: a line each would flood the log)."""
    log.debug("deferred %s by %.1f s: %s", _who(dispatch), outcome.after, outcome.reason)


def say_failed(dispatch: Dispatch, outcome: Outcome) -> None:
    """WARNING: the delivery failed for good."""
    reason = getattr(outcome, "reason", "")
    log.warning(
        "failed %s after attempt %d: %s", _who(dispatch), dispatch.delivery.attempts, reason
    )


def say_deactivated(dispatch: Dispatch, outcome: Outcome) -> None:
    """WARNING: the gateway said the device's token is dead; it receives nothing more."""
    reason = getattr(outcome, "reason", "")
    log.warning(
        "deactivated device %s (%s): %s, answering %s",
        dispatch.device.id,
        dispatch.device.platform.value,
        reason,
        dispatch.notification.id,
    )
