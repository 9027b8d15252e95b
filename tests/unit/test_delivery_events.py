"""What a gateway's answer does to a delivery, decided through the transition table."""

from __future__ import annotations

from datetime import UTC, datetime

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pushcore.domain import outcomes
from pushcore.domain.errors import IllegalTransition
from pushcore.domain.model import Delivery
from pushcore.domain.outcomes import Delivered, Failed, Outcome, Retry, TokenInvalid
from pushcore.domain.retry import RetryPolicy
from pushcore.domain.states import DeliveryStatus, next_delivery_status

D = DeliveryStatus
T = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)
reasons = st.text(max_size=20)
answers: st.SearchStrategy[Outcome] = st.one_of(
    st.just(Delivered()),
    st.builds(Retry, reasons, st.none() | st.floats(0, 3600)),
    st.builds(TokenInvalid, reasons),
    st.builds(Failed, reasons),
)


def next_status(status: DeliveryStatus, outcome: Outcome, attempts: int, policy: RetryPolicy) -> D:
    """As the engine's record step decides it."""
    return next_delivery_status(
        status, outcomes.delivery_event(outcome, not policy.gives_up(attempts))
    )


@given(answers, st.integers(1, 30), st.integers(1, 20))
def test_an_in_flight_delivery_goes_where_its_outcome_says(
    outcome: Outcome, attempts: int, max_attempts: int
) -> None:
    policy = RetryPolicy(max_attempts=max_attempts, max_age=0)  # the attempts alone decide
    after = next_status(D.IN_FLIGHT, outcome, attempts, policy)

    if isinstance(outcome, Delivered):
        assert after is D.DELIVERED
    elif isinstance(outcome, Retry) and attempts < max_attempts:
        assert after is D.PENDING  # tried again later
    else:
        assert after is D.FAILED  # refused for good, or out of attempts


@given(answers, st.sampled_from([D.PENDING, D.DELIVERED, D.FAILED, D.CANCELLED]))
def test_an_outcome_for_a_delivery_not_in_flight_is_refused(
    outcome: Outcome, status: DeliveryStatus
) -> None:
    with pytest.raises(IllegalTransition):
        next_status(status, outcome, 1, RetryPolicy())


@pytest.mark.parametrize(
    ("attempts", "reason", "redelivery"),
    [
        (1, None, False),  # a first claim
        (2, None, True),  # claimed before, no answer recorded: its lease ran out
        (5, None, True),
        (2, "Service Unavailable", False),  # a recorded retry
        (3, "Service Unavailable", False),  # (a lease lost on a retry looks the same)
    ],
)
def test_a_claim_after_an_unanswered_one_is_a_redelivery(
    attempts: int, reason: str | None, redelivery: bool
) -> None:
    delivery = Delivery("dlv_1", "ntf_1", "acct_1", "dev_1", D.IN_FLIGHT, T, attempts)
    assert outcomes.is_redelivery(attrs.evolve(delivery, failure_reason=reason)) is redelivery
