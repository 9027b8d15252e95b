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
there, that much before their due time, as for any claimed delivery.

It was off by default for a while: a burst went out at the engine's full rate,
faster than SQLite recorded its answers (a kill -9 during 3,000 falling due at one
instant repeated answers up to 0.42 s old; API.md allows 100 ms), and its event
webhooks waited behind its records (p99 0.46-0.74 s for 5,000). Since the engine's
requests wait for its records (delivery/pace.py), the same kill repeats answers at
most 29-48 ms old with the lead as without it, and a burst's events come as soon
(p99 201-230 ms against 219-303 ms without; docs/benchmarks.md, "Local-time
sends", 2026-11-28 afternoon). So on by default again. What the pace costs a burst:
its sends follow its records, so where more than the in-flight cap falls due at
once (two zones at one 09:00), the last go out 0.05-0.26 s late.
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
