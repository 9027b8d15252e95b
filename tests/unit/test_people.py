"""The rules of people who sign in: account ids, password lengths, refresh tokens."""

from __future__ import annotations

import re
import string

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from pushcore.converter import structure_request
from pushcore.domain.errors import ValidationError
from pushcore.domain.people import (
    ACCOUNT_ID_MAX,
    ACCOUNT_ID_PATTERN,
    PASSWORD_MAX,
    PASSWORD_MIN,
    SignUp,
    check_password,
    common_passwords,
    hash_refresh_token,
    is_well_formed_refresh_token,
    local_account_id,
    refresh_token_from,
)

FIRST = string.ascii_letters + string.digits
REST = FIRST + "._-@+"
ids = st.builds(
    lambda head, tail: head + tail,
    st.sampled_from(FIRST),
    st.text(alphabet=REST, max_size=ACCOUNT_ID_MAX - 1),
)


@given(ids)
def test_an_id_of_the_allowed_characters_is_kept_lowercase(raw: str) -> None:
    made = local_account_id(raw)
    assert made == raw.lower()
    assert local_account_id(made) == made  # lowercasing again changes nothing


@given(st.text(max_size=80))
def test_an_id_is_taken_exactly_when_the_documented_pattern_matches(raw: str) -> None:
    # The pattern the OpenAPI document shows (ECMAScript: $ is the end) is the rule.
    documented = re.fullmatch(ACCOUNT_ID_PATTERN.strip("^$"), raw) is not None
    try:
        local_account_id(raw)
    except ValueError:
        assert not documented
    else:
        assert documented


@given(ids, st.sampled_from(list("!#$%&*/\\:;<=>?[]^`{|}~ \t\n\u00e9\u0130\u212a")))
def test_any_other_character_is_refused(raw: str, bad: str) -> None:
    with pytest.raises(ValueError, match="a-z 0-9"):
        local_account_id(raw + bad)


@pytest.mark.parametrize("raw", ["", ".alice", "-a", "@a", "+a", "_a", "a" * 65])
def test_a_bad_start_or_length_is_refused(raw: str) -> None:
    with pytest.raises(ValueError, match="1 to 64"):
        local_account_id(raw)


@given(st.text(min_size=PASSWORD_MIN, max_size=PASSWORD_MAX))
def test_passwords_of_8_to_256_characters_are_taken(password: str) -> None:
    assume(password.lower() not in common_passwords())
    assert check_password(password) == password


@given(st.sampled_from(sorted(p for p in common_passwords() if len(p) >= PASSWORD_MIN)))
def test_the_10000_most_common_passwords_are_refused_in_any_case(password: str) -> None:
    for written in (password, password.upper(), password.title()):
        with pytest.raises(ValueError, match="10,000 most common"):
            check_password(written)


@given(
    st.one_of(
        st.text(max_size=PASSWORD_MIN - 1),
        st.text(min_size=PASSWORD_MAX + 1, max_size=PASSWORD_MAX + 40),
    )
)
def test_shorter_and_longer_passwords_are_refused(password: str) -> None:
    with pytest.raises(ValueError, match="8 to 256"):
        check_password(password)


def test_a_sign_up_names_every_bad_field() -> None:
    with pytest.raises(ValidationError) as refused:
        structure_request(SignUp, {"account": "-x", "password": "short"})
    assert [d.field for d in refused.value.details] == ["account", "password"]


@given(st.binary(min_size=32, max_size=32))
def test_refresh_tokens_have_their_form_and_hash(random: bytes) -> None:
    token = refresh_token_from(random)
    assert re.fullmatch(r"psr_[A-Za-z0-9_-]{43}", token)
    assert is_well_formed_refresh_token(token)
    assert not is_well_formed_refresh_token(token[:-1])
    assert not is_well_formed_refresh_token(token + "A")
    assert not is_well_formed_refresh_token("psk_" + token[4:])
    assert re.fullmatch(r"[0-9a-f]{64}", hash_refresh_token(token))


@given(st.binary(min_size=32, max_size=32), st.binary(min_size=32, max_size=32))
def test_different_randomness_makes_different_tokens_and_hashes(a: bytes, b: bytes) -> None:
    if a != b:
        assert refresh_token_from(a) != refresh_token_from(b)
        assert hash_refresh_token(refresh_token_from(a)) != hash_refresh_token(
            refresh_token_from(b)
        )


@pytest.mark.parametrize("size", [0, 16, 31, 33])
def test_a_token_needs_exactly_32_random_bytes(size: int) -> None:
    with pytest.raises(ValueError, match="32 random bytes"):
        refresh_token_from(bytes(size))
