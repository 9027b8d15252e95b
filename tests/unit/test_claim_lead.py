"""The engine's claim lead: the configured one, or as long as claiming what falls
due together takes, up to the burst lead (pushcore/delivery/lead.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from pushcore.delivery.config import EngineConfig
from pushcore.delivery.lead import CLAIM_SAMPLE, MARGIN, Lead

CONFIG = EngineConfig(
    lead=timedelta(milliseconds=20), burst_lead=timedelta(seconds=1), claim_cost=0.0005
)
NOW = datetime(2026, 11, 27, 9, tzinfo=UTC)


@given(st.integers(min_value=0, max_value=100_000))
def test_the_lead_is_the_configured_one_at_least_and_the_burst_lead_at_most(count: int) -> None:
    lead = Lead(CONFIG).plan(count)
    assert CONFIG.lead <= lead <= CONFIG.burst_lead
    wanted = timedelta(seconds=count * CONFIG.claim_cost * MARGIN)
    assert lead == min(CONFIG.burst_lead, max(CONFIG.lead, wanted))


@given(st.integers(min_value=0, max_value=50_000), st.integers(min_value=0, max_value=50_000))
def test_more_due_together_never_shortens_the_lead(a: int, b: int) -> None:
    lead = Lead(CONFIG)
    assert lead.plan(min(a, b)) <= lead.plan(max(a, b))


def test_a_few_due_together_keep_the_configured_lead() -> None:
    lead = Lead(CONFIG)
    assert lead.plan(1) == CONFIG.lead
    assert lead.plan(None) == lead.current == CONFIG.lead


def test_the_cost_is_learnt_from_large_claims_only() -> None:
    lead = Lead(CONFIG)
    lead.claimed(CLAIM_SAMPLE - 1, 10.0)  # a small claim's time is mostly its fixed cost
    assert lead.cost == CONFIG.claim_cost
    for _ in range(50):
        lead.claimed(1000, 0.1)  # 0.1 ms a delivery
    assert abs(lead.cost - 0.0001) < 1e-6
    assert abs(lead.plan(1000).total_seconds() - 0.2) < 0.001  # 1000 x 0.1 ms, twice over


def test_it_counts_only_what_is_further_away_than_the_configured_lead() -> None:
    lead = Lead(CONFIG)
    assert not lead.counts(None, NOW)
    assert not lead.counts(NOW + CONFIG.lead, NOW)  # being claimed already
    assert lead.counts(NOW + CONFIG.lead + timedelta(milliseconds=1), NOW)
    # No burst lead (the default), one no longer than the lead, or a lead of 0 (claim
    # at the due time): nothing to decide.
    far = NOW + timedelta(hours=1)
    assert not Lead(EngineConfig(lead=timedelta(milliseconds=20))).counts(far, NOW)
    second = timedelta(seconds=1)
    assert not Lead(EngineConfig(lead=second, burst_lead=second)).counts(far, NOW)
    assert not Lead(EngineConfig(lead=timedelta(0), burst_lead=second)).counts(far, NOW)
