"""API key format and checksum, key hashing, and stream codes (pushcore.domain.codes)."""

from __future__ import annotations

import hashlib
import random
import re
import zlib
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pushcore.domain.codes import (
    API_KEY_LENGTH,
    API_KEY_PREFIX,
    BASE62,
    CODE_SUFFIX_ALPHABET,
    WORDS,
    api_key_checksum,
    api_key_from_random,
    api_key_prefix,
    base62,
    hash_api_key,
    is_stream_code,
    is_well_formed_api_key,
    new_api_key,
    new_stream_code,
)

# Written out here rather than imported, so a wrong constant in the module is caught.
ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
VECTOR_RANDOM = "abcdefghijklmnopqrstuvwxyzABCDEF"
VECTOR_KEY = "psk_abcdefghijklmnopqrstuvwxyzABCDEF1mVgZW"
CODE_RE = re.compile(r"^[a-z]+-[a-hj-km-np-z2-9]{4}$")

random_parts = st.text(alphabet=ALPHABET, min_size=32, max_size=32)


def decode_base62(text: str) -> int:
    """The test's own base-62 decoder (positional, most significant digit first)."""
    number = 0
    for char in text:
        number = number * 62 + ALPHABET.index(char)
    return number


# -- API keys ----------------------------------------------------------------


def test_api_md_test_vector() -> None:
    assert api_key_from_random(VECTOR_RANDOM) == VECTOR_KEY
    assert is_well_formed_api_key(VECTOR_KEY)
    assert api_key_prefix(VECTOR_KEY) == "psk_abcdefgh"


def test_checksum_is_crc32_in_base62_padded_to_six() -> None:
    assert BASE62 == ALPHABET
    assert api_key_checksum(VECTOR_RANDOM) == "1mVgZW"
    assert decode_base62("1mVgZW") == zlib.crc32(VECTOR_RANDOM.encode("ascii"))


def test_every_single_character_substitution_of_the_vector_is_detected() -> None:
    # Exhaustive over the 38 positions after the prefix and the 61 other characters.
    for position in range(len(API_KEY_PREFIX), API_KEY_LENGTH):
        for char in ALPHABET:
            if char == VECTOR_KEY[position]:
                continue
            typo = VECTOR_KEY[:position] + char + VECTOR_KEY[position + 1 :]
            assert not is_well_formed_api_key(typo), typo


@given(random_parts)
def test_any_random_part_gives_a_well_formed_key(random_part: str) -> None:
    key = api_key_from_random(random_part)
    assert is_well_formed_api_key(key)
    assert len(key) == 42 == API_KEY_LENGTH
    assert key.startswith("psk_")
    assert key[4:36] == random_part
    assert re.fullmatch(r"psk_[0-9A-Za-z]{38}", key)
    assert api_key_prefix(key) == key[:12]
    assert decode_base62(key[36:]) == zlib.crc32(random_part.encode("ascii"))


@given(random_parts, st.data())
def test_a_single_substitution_anywhere_after_the_prefix_is_detected(
    random_part: str, data: st.DataObject
) -> None:
    key = api_key_from_random(random_part)
    position = data.draw(st.integers(len(API_KEY_PREFIX), API_KEY_LENGTH - 1), label="position")
    replacement = data.draw(
        st.sampled_from([c for c in ALPHABET if c != key[position]]), label="replacement"
    )
    typo = key[:position] + replacement + key[position + 1 :]
    assert not is_well_formed_api_key(typo)


@given(random_parts, st.integers(1, 41))
def test_a_truncated_key_is_refused(random_part: str, cut: int) -> None:
    key = api_key_from_random(random_part)
    assert not is_well_formed_api_key(key[:-cut])


@given(random_parts, st.text(alphabet=ALPHABET, min_size=1, max_size=5), st.booleans())
def test_extra_characters_are_refused(random_part: str, extra: str, at_end: bool) -> None:
    key = api_key_from_random(random_part)
    longer = key + extra if at_end else key[:10] + extra + key[10:]
    assert not is_well_formed_api_key(longer)


@given(random_parts, st.text(min_size=4, max_size=4).filter(lambda p: p != "psk_"))
def test_a_wrong_prefix_is_refused(random_part: str, prefix: str) -> None:
    key = api_key_from_random(random_part)
    assert not is_well_formed_api_key(prefix + key[4:])


@pytest.mark.parametrize(
    "key",
    [
        "",
        "psk_",
        VECTOR_KEY.upper(),
        VECTOR_KEY.replace("psk_", "PSK_"),
        VECTOR_KEY.replace("psk_", "sk_x"),
        VECTOR_KEY[:20] + "-" + VECTOR_KEY[21:],
        VECTOR_KEY[:20] + "é" + VECTOR_KEY[21:],
        " " + VECTOR_KEY[1:],
        VECTOR_KEY[:-1] + " ",
    ],
)
def test_malformed_keys_are_refused(key: str) -> None:
    assert not is_well_formed_api_key(key)


@pytest.mark.parametrize(
    "random_part",
    ["", "a" * 31, "a" * 33, "a" * 31 + "-", "a" * 31 + "é", "a" * 31 + " "],
)
def test_api_key_from_random_refuses_a_bad_random_part(random_part: str) -> None:
    with pytest.raises(ValueError, match="32 base62"):
        api_key_from_random(random_part)


def test_new_api_key_draws_32_characters_below_62() -> None:
    asked: list[int] = []
    counter = iter(range(10_000))

    def randbelow(n: int) -> int:
        asked.append(n)
        return next(counter) % n

    key = new_api_key(randbelow)
    assert asked == [62] * 32
    assert key == api_key_from_random(ALPHABET[:32])
    assert new_api_key(lambda _n: 0) == api_key_from_random("0" * 32)
    assert new_api_key(lambda n: n - 1) == api_key_from_random("z" * 32)


@given(st.integers(min_value=0, max_value=2**32))
def test_new_api_key_is_reproducible_with_a_seeded_randbelow(seed: int) -> None:
    first = new_api_key(random.Random(seed).randrange)
    second = new_api_key(random.Random(seed).randrange)
    assert first == second
    assert is_well_formed_api_key(first)


def test_new_api_key_with_real_randomness_is_well_formed() -> None:
    import secrets

    keys = {new_api_key(secrets.randbelow) for _ in range(50)}
    assert len(keys) == 50
    assert all(is_well_formed_api_key(k) for k in keys)


# -- hashing -----------------------------------------------------------------


@given(random_parts)
def test_hash_is_sha256_hex(random_part: str) -> None:
    key = api_key_from_random(random_part)
    digest = hash_api_key(key)
    assert re.fullmatch(r"[0-9a-f]{64}", digest)
    assert digest == hashlib.sha256(key.encode()).hexdigest()
    assert hash_api_key(key) == digest  # deterministic: lookups by hash work


@given(random_parts, random_parts)
def test_different_keys_have_different_hashes(first: str, second: str) -> None:
    if first != second:
        assert hash_api_key(api_key_from_random(first)) != hash_api_key(api_key_from_random(second))


# -- base62 ------------------------------------------------------------------


@given(st.integers(min_value=0, max_value=2**256), st.integers(min_value=0, max_value=60))
def test_base62_round_trips(number: int, width: int) -> None:
    text = base62(number, width)
    assert decode_base62(text) == number
    assert set(text) <= set(ALPHABET)
    assert len(text) >= width
    # Padding only: no leading zero beyond the requested width.
    if len(text) > width:
        assert not text.startswith("0")


def test_base62_small_values() -> None:
    assert base62(0, 6) == "000000"
    assert base62(0, 0) == ""
    assert base62(61, 1) == "z"
    assert base62(62, 1) == "10"
    assert base62(2**32 - 1, 6) == "4gfFC3"


def test_base62_refuses_negative_numbers() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        base62(-1, 6)


def test_the_checksum_always_fits_in_six_characters() -> None:
    assert len(base62(0xFFFFFFFF, 6)) == 6


# -- stream codes ------------------------------------------------------------


def test_words_are_many_unique_lowercase_alphabetic_words() -> None:
    assert len(WORDS) >= 1000
    assert len(set(WORDS)) == len(WORDS)
    for word in WORDS:
        assert word.isascii()
        assert word.isalpha()
        assert word.islower()


def test_suffix_alphabet_has_no_look_alikes() -> None:
    assert set(CODE_SUFFIX_ALPHABET) == set("abcdefghjkmnpqrstuvwxyz23456789")
    assert len(set(CODE_SUFFIX_ALPHABET)) == len(CODE_SUFFIX_ALPHABET)
    assert not set(CODE_SUFFIX_ALPHABET) & set("0o1li")


def _check_code(code: str) -> None:
    assert CODE_RE.match(code), code
    word, suffix = code.split("-")
    assert word in WORDS
    assert not set(suffix) & set("0o1li")
    assert is_stream_code(code)


@given(st.data())
@settings(max_examples=300)
def test_stream_codes_with_drawn_randomness_are_well_formed(data: st.DataObject) -> None:
    asked: list[int] = []

    def randbelow(n: int) -> int:
        asked.append(n)
        return data.draw(st.integers(0, n - 1))

    _check_code(new_stream_code(randbelow))
    assert asked == [len(WORDS)] + [len(CODE_SUFFIX_ALPHABET)] * 4


@given(st.randoms(use_true_random=False))
def test_stream_codes_with_seeded_randomness_are_well_formed(rng: random.Random) -> None:
    _check_code(new_stream_code(rng.randrange))


@pytest.mark.parametrize("pick", [lambda _n: 0, lambda n: n - 1])
def test_stream_code_extremes(pick: Callable[[int], int]) -> None:
    _check_code(new_stream_code(pick))


def test_stream_code_example_and_first_word() -> None:
    assert new_stream_code(lambda _n: 0) == f"{WORDS[0]}-aaaa"
    assert new_stream_code(lambda n: n - 1) == f"{WORDS[-1]}-9999"


@pytest.mark.parametrize(
    "code",
    [
        "",
        "-",
        WORDS[0],
        f"{WORDS[0]}-",
        f"{WORDS[0]}7k2q",
        f"{WORDS[0]}-7k2",
        f"{WORDS[0]}-7k2qq",
        f"{WORDS[0]}-7k2o",
        f"{WORDS[0]}-7k20",
        f"{WORDS[0]}-7k21",
        f"{WORDS[0]}-7k2l",
        f"{WORDS[0]}-7k2i",
        f"{WORDS[0]}-7K2Q",
        f"{WORDS[0].upper()}-7k2q",
        f"{WORDS[0]}-7k-q",
        f"{WORDS[0]}_7k2q",
        f" {WORDS[0]}-7k2q",
        f"{WORDS[0]}-7k2q ",
        f"{WORDS[0]}-7k2q-7k2q",
        "notaword-7k2q",
        "-7k2q",
    ],
)
def test_malformed_stream_codes_are_refused(code: str) -> None:
    if "notaword" in code:
        assert "notaword" not in WORDS
    assert not is_stream_code(code)


@given(st.text(max_size=20))
def test_anything_accepted_as_a_stream_code_has_the_documented_form(text: str) -> None:
    if is_stream_code(text):
        assert CODE_RE.match(text)
        assert text.split("-", maxsplit=1)[0] in WORDS


@given(st.sampled_from(WORDS), st.text(alphabet=CODE_SUFFIX_ALPHABET, min_size=4, max_size=4))
def test_every_word_and_suffix_is_a_stream_code(word: str, suffix: str) -> None:
    assert is_stream_code(f"{word}-{suffix}")
