"""How far ahead of its due time the engine claims work (its claim lead).

A claim before the due time takes the claim's database work out of how late a
delivery arrives: the engine claims ``EngineConfig.lead`` early and sends at
the due time. That suits deliveries that fall due a few at a time. Thousands
falling due at one instant (a local-time send reaching a zone's 09:00, API.md)
take longer to claim than that lead, and the last would go out late by the
claims before them. So, with ``EngineConfig.burst_lead`` set
(PUSHCORE_SCHEDULER_BURST_LEAD_SECONDS: 1 s unless set to 0), before it sleeps
the engine counts what falls due together next, and claims early by as long as
claiming it takes (twice its measured cost per delivery), up to that lead.

The price, paid only by those large instants: a PATCH or cancel of them is
refused, and their inbox entries are there, that much before their due time, as
for any claimed delivery. And the burst then goes out at once, so its answers
all wait for their records together: API.md's crash rule (an answer recorded
within 100 ms) holds only if the records keep up. Three things make them:
- the engine paces its requests by its records (delivery/pace.py,
  :class:`~pushcore.delivery.pace.RecordPace`): a webhook burst's lanes start
  no request while an answer is 50 ms unrecorded;
- a batch gateway (FCM, APNs) is handed a burst whole, before any answer is
  late; so no more is handed at once than one record stores in 60 ms, at the
  cost measured on large records (:class:`~pushcore.delivery.pace.RecordCost`):
  4,000-6,000 on a 2-core machine, fewer on a slower or busier one, where the
  last of an instant then go later instead of their records;
- a local-time send stores its deliveries in due order (storage/sql/localtime.py),
  so a zone's lie together and its records write a few pages, not the whole table.
Before the last two, a burst's answers waited up to 0.22 s for their records on a
slower machine, which kept this off by default (docs/benchmarks.md, "Local-time
sends"); since, at most 45-74 ms in each run, and 76-91 ms beside two busy processes.
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
