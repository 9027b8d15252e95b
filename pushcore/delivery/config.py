"""How the engine is tuned, and who it is among the processes sharing the queue."""

from __future__ import annotations

import os
import secrets
import socket
from datetime import timedelta

import attrs

from pushcore.domain.retry import RetryPolicy


@attrs.frozen
class EngineConfig:
    """Tuning of the engine; the defaults suit one process on SQLite."""

    batch_size: int = 256
    # How long a claim holds a delivery without news from its process. The
    # process renews the leases of what it holds on every heartbeat, so a
    # delivery is claimed again (and may arrive twice) only when the process
    # that held it stopped beating for this long: it died.
    lease: timedelta = timedelta(seconds=30)
    heartbeat: timedelta = timedelta(seconds=2)
    # The backstop for work another process added while this one sleeps.
    tick: float = 1.0
    # Handed to gateways and not yet recorded: what a crash can send again. 8,192 lets
    # two local-time zones that share their 09:00 (5,000 at one instant) go at once;
    # the answers' records are bounded apart from it (delivery/pace.py).
    max_in_flight: int = 8192
    # The part of max_in_flight that deliveries released at the end of quiet hours
    # may fill (a release of 100,000 goes in slices): the rest stays free for the
    # work falling due meanwhile, which would otherwise wait for a slice to finish.
    release_share: float = 0.5
    # And a claim takes at most this many of them: a notification falling due
    # during a release waits for the claim under way, then is claimed in the next
    # (due work first), so a claim's length is what it may wait, twice over. The
    # engine claims slice after slice while the release's room takes them. 16: 100,000
    # out in 30-35 s, another account's p99 3-5 ms against 2.5 before (64: 25-29 s,
    # 6-8.5 ms; 8: 65 s; docs/benchmarks.md, "Quiet hours").
    release_batch: int = 16
    # Claim work this much before it is due and send each at its due time, so
    # that the claim's transaction is not part of how late a delivery is.
    lead: timedelta = timedelta(0)
    # More falls due at one instant than a lead's claims can take (a local-time
    # send's zone at 09:00: thousands): the lead grows to what claiming them all
    # takes, never past this (delivery/lead.py). 0, the default here: it never grows
    # (the service's engine takes PUSHCORE_SCHEDULER_BURST_LEAD_SECONDS, 1 s by default).
    burst_lead: timedelta = timedelta(0)
    # What claiming a delivery costs, in seconds, until the engine has measured
    # it on claims of at least CLAIM_SAMPLE deliveries (engine.py).
    claim_cost: float = 0.0003
    # What recording an answer costs, in seconds, until the engine has measured it
    # (delivery/pace.py: no more is handed at once than one record stores in time).
    record_cost: float = 0.000015
    # At a stop, how long the deliveries in flight may take to be answered and
    # recorded; what is left is handed back, sent again by the next claim. A
    # server's stop runs it beside the HTTP drain, within API.md's 5 s.
    shutdown_grace: float = 3.0
    retry: RetryPolicy = attrs.field(factory=RetryPolicy)


def new_owner() -> str:
    """A lease owner name unique to this process run."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
