"""Who a finished single sign-on signs into (pure): an identity's binding decides, a
claim alone never opens an account the identity is not bound to."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pushcore.domain.oidc import (
    Landing,
    SignInError,
    SignInFailed,
    Standing,
    check_email_verified,
    identity_from_claims,
    landing,
)

ids = st.sampled_from(["carol", "Carol", "frank", "x@example.com"])
standings = st.builds(Standing, st.none() | ids, st.booleans(), st.booleans())


def outcome(standing: Standing, claimed: str, link_to: str | None) -> Landing | SignInError:
    try:
        return landing(standing, claimed, link_to)
    except SignInFailed as failed:
        return failed.reason


@given(standings, ids, st.none() | ids)
def test_a_sign_in_lands_only_where_the_identity_is_bound_or_may_be_bound(
    standing: Standing, claimed: str, link_to: str | None
) -> None:
    where = outcome(standing, claimed, link_to)
    if link_to is not None:
        if standing.bound_to is None:
            assert where == Landing(link_to, bind=True)
        elif standing.bound_to == link_to:
            assert where == Landing(link_to)
        else:  # the identity is another account's: never moved by a link
            assert where is SignInError.IDENTITY_LINKED
    elif standing.bound_to is not None:
        # A bound identity signs into its own account, whatever it claims.
        assert where == Landing(standing.bound_to)
    elif not standing.claimed_exists:
        assert where == Landing(claimed, bind=True, create=True)
    elif standing.claimed_unbound_legacy:
        # Made by single sign-on before identities were bound, no password: bound now.
        assert where == Landing(claimed, bind=True)
    else:
        # Any other account the claim names (a password account): a clash.
        assert where is SignInError.ACCOUNT_EXISTS


@pytest.mark.parametrize("verified", [True, "true"])
def test_a_verified_email_passes(verified: object) -> None:
    check_email_verified({"email_verified": verified}, "email")


@pytest.mark.parametrize("verified", [None, False, "false", "TRUE ", 1, "1", [], {}])
def test_an_unverified_email_is_refused(verified: object) -> None:
    claims: dict[str, Any] = {} if verified is None else {"email_verified": verified}
    with pytest.raises(SignInFailed) as failed:
        check_email_verified(claims, "email")
    assert failed.value.reason is SignInError.EMAIL_UNVERIFIED


def test_email_verified_matters_only_when_the_email_is_the_account() -> None:
    check_email_verified({"email_verified": False}, "preferred_username")


@pytest.mark.parametrize(
    "claims", [{}, {"iss": "https://idp"}, {"sub": "x"}, {"iss": "https://idp", "sub": ""},
               {"iss": "https://idp", "sub": 7}, {"iss": "https://idp", "sub": "a\x00b"}],
)  # fmt: skip
def test_an_identity_needs_an_issuer_and_a_subject(claims: dict[str, Any]) -> None:
    with pytest.raises(SignInFailed):
        identity_from_claims(claims)
    assert identity_from_claims({"iss": "https://idp", "sub": "x"}) == ("https://idp", "x")
