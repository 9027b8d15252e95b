"""How far ahead of its due time the engine claims work (its claim lead).

A claim before the due time takes the claim's database work out of how late a
delivery arrives: the engine claims ``EngineConfig.lead`` early and sends at
the due time. That suits deliveries that fall due a few at a time. Thousands
falling due at one instant (a local-time send reaching a zone's 09:00, API.md)
take longer to claim than that lead, and the last would go out late by the
claims before them. So, with ``EngineConfig.burst_lead`` set
(PUSHCORE_SCHEDULER_BURST_LEAD_SECONDS: off unless set), before it sleeps the
engine counts what falls due together next, and claims early by as long as
claiming it takes (twice its measured cost per delivery), up to that lead. The
price, paid only by those large instants: a PATCH or cancel of them is refused,
and their inbox entries are there, that much before their due time, as for any
claimed delivery. And the burst then goes out at the engine's full rate, faster
than SQLite records its answers: the writer's every transaction (claims, records,
roll-ups) waits, at each statement, up to a switch interval for the interpreter
lock the busy event loop holds. A burst's event webhooks came later (p99 0.46-0.74 s
for 5,000, docs/benchmarks.md, "Event webhooks: beside the engine", 2026-11-28),
and a kill -9 during 3,000 falling due at one instant repeated answers up to
0.42 s old (0.06-0.42 s in 18 runs, past 0.25 s in 8; 0.07-0.18 s in 21 without;
API.md allows 100 ms; docs/benchmarks.md, "Crash repeats"). Since the engine paces
its requests by its records (delivery/pace.py), that kill (webhooks, whose lanes start
a request at a time) repeats answers 29-48 ms old with the lead as without it, and the
events come as soon. But a burst to a batch gateway (FCM, APNs) is handed up to the
in-flight cap at once, before any answer is late, and a few thousand answers then wait
up to 0.22 s for their records (0.12 s without the lead; docs/benchmarks.md,
"Local-time sends", 2026-11-28 afternoon). So it stays off by default.
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
