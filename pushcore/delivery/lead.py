"""How far ahead of its due time the engine claims work (its claim lead).

A claim before the due time takes the claim's database work out of how late a
delivery arrives: the engine claims ``EngineConfig.lead`` early and sends at
the due time. That suits deliveries that fall due a few at a time. Thousands
falling due at one instant (a local-time send reaching a zone's 09:00, API.md)
take longer to claim than that lead, and the last would go out late by the
claims before them. So, with ``EngineConfig.burst_lead`` set
(PUSHCORE_SCHEDULER_BURST_LEAD_SECONDS: 1 s unless set, 0 turns it off; the
library's EngineConfig leaves it at 0), before it sleeps the engine counts what
falls due together next, and claims early by as long as claiming it takes (twice
its measured cost per delivery), up to that lead. The price, paid only by those
large instants: a PATCH or cancel of them is refused, and their inbox entries are
there, that much before their due time, as for any claimed delivery. And the burst
then goes out at the engine's full rate, its records back to back: on SQLite they
kept the roll-ups, which write the event webhooks' outbox, waiting for the whole
burst, and the sender then took the events 512 a third of a second (a burst of
5,000: events p99 1.6-1.7 s, against 0.3-0.8 s without). The writer's turns
(storage/sqlite/locks.py, ``PATIENCE``) and the sender's claims
(delivery/webhooks.py) brought that to 0.5-1.15 s; the roll-up's notifications
stored in one statement and a fast endpoint's backlog claimed as it is answered
(not a share a tenth of a second) to 0.46-0.74 s on a quiet 2-core machine
(docs/benchmarks.md, "Event webhooks: beside the engine", 2026-11-28): within the
second events have, so on by default.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pushcore.delivery.config import EngineConfig

# Claims of fewer deliveries say more about a claim's fixed cost than about a delivery's.
CLAIM_SAMPLE = 64
# The share of each new measurement in the running estimate.
WEIGHT = 0.3
# How much longer than the estimate the lead is: a claim waits for the writer too.
MARGIN = 2.0


class Lead:
    """The current claim lead, and what it is made from."""

    def __init__(self, config: EngineConfig) -> None:
        self._config = config
        self.cost = config.claim_cost  # seconds to claim one delivery, estimated
        self.current = config.lead

    def claimed(self, count: int, seconds: float) -> None:
        """A claim took ``seconds`` for ``count`` deliveries."""
        if count >= CLAIM_SAMPLE:
            self.cost += WEIGHT * (seconds / count - self.cost)

    def counts(self, next_due: datetime | None, now: datetime) -> bool:
        """Whether what falls due at ``next_due`` is worth counting: it could need
        more than the configured lead, and is not being claimed already. A lead of
        0 says: claim nothing before its due time."""
        config = self._config
        if next_due is None or not timedelta(0) < config.lead < config.burst_lead:
            return False
        return next_due - now > config.lead

    def plan(self, due_together: int | None) -> timedelta:
        """Set the lead for ``due_together`` deliveries falling due next (None: the
        configured lead); return it."""
        config = self._config
        lead = config.lead
        if due_together is not None:
            need = timedelta(seconds=due_together * self.cost * MARGIN)
            lead = min(config.burst_lead, max(lead, need))
        self.current = lead
        return lead
