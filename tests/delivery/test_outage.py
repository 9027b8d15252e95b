"""A gateway outage of twenty minutes, on the fake clock: the default retries outlast it."""

from __future__ import annotations

from datetime import datetime, timedelta

from pushcore.delivery import DeliveryEngine
from pushcore.domain.retry import RetryPolicy
from pushcore.domain.states import NotificationStatus
from tests.delivery.conftest import T0, Harness

OUTAGE_END = T0 + timedelta(minutes=20)


def run_until_quiet(h: Harness, engine: DeliveryEngine, until: datetime) -> None:
    """Move the clock from one due time to the next, as the run loop would, up to ``until``."""
    while True:
        h.step(engine)  # claims what is due now and records it
        next_due = h.step(engine)  # with everything recorded: when is anything due next?
        if next_due is None or next_due > until:
            return
        h.clock.set(max(next_due, h.clock.now()))


def test_notifications_due_during_an_outage_are_delivered_after_it(h: Harness) -> None:
    h.device("tok-a")
    h.gateway.down_until(OUTAGE_END)  # every send answers 503 until then
    # Due from 5 s to 19 min 35 s into the outage.
    notes = [h.notify_in(5 + 65 * i) for i in range(19)]
    engine = h.engine(retry=RetryPolicy())  # the default schedule, not the tests' short one

    run_until_quiet(h, engine, OUTAGE_END + timedelta(hours=1))

    assert [h.status(n) for n in notes] == [NotificationStatus.DELIVERED] * len(notes)
    for n in notes:
        sent = h.gateway.for_notification(n.id)
        assert min(s.at for s in sent) >= n.scheduled_at  # never before its due time
        assert [s.at >= OUTAGE_END for s in sent] == [False] * (len(sent) - 1) + [True]
    # The first retry after a 503 comes a second later or more, not at once.
    first, second = h.gateway.for_notification(notes[0].id)[:2]
    assert second.at - first.at >= timedelta(seconds=1)
