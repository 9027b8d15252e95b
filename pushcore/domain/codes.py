"""API key format and stream codes.

Pure functions: randomness comes in as a ``randbelow`` callable so that tests
can pin it and production can pass :func:`secrets.randbelow`.
"""

from __future__ import annotations

import hashlib
import hmac
import zlib
from collections.abc import Callable
from importlib.resources import files

RandBelow = Callable[[int], int]

BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
API_KEY_PREFIX = "psk_"
API_KEY_RANDOM_LENGTH = 32
API_KEY_CHECKSUM_LENGTH = 6
API_KEY_LENGTH = len(API_KEY_PREFIX) + API_KEY_RANDOM_LENGTH + API_KEY_CHECKSUM_LENGTH
KEY_PREFIX_LENGTH = 12

# Stream code suffixes avoid characters people misread (0/o, 1/l/i).
CODE_SUFFIX_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"
CODE_SUFFIX_LENGTH = 4

# Stream code words: the BIP-39 English list (2,048 common lowercase words chosen
# to be easy to read, type and tell apart; MIT licence, trezor/python-mnemonic).
# "falcon-7k2q" is easier to say over the phone than a random string, and the
# suffix makes it unique. Data, not code: a package file read once at import.
WORDS: tuple[str, ...] = tuple(
    files("pushcore.domain").joinpath("bip39-english.txt").read_text("ascii").split()
)

_BASE62_SET = frozenset(BASE62)
_SUFFIX_SET = frozenset(CODE_SUFFIX_ALPHABET)
_WORD_SET = frozenset(WORDS)


def base62(number: int, width: int) -> str:
    """``number`` in base 62 (``0-9A-Za-z``), left-padded with ``0`` to ``width``."""
    if number < 0:
        raise ValueError("base62 takes a non-negative number")
    digits: list[str] = []
    while number:
        number, rest = divmod(number, 62)
        digits.append(BASE62[rest])
    return "".join(reversed(digits)).rjust(width, "0")


def api_key_checksum(random_part: str) -> str:
    """The 6-character checksum of an API key's random part (CRC-32 in base 62)."""
    return base62(zlib.crc32(random_part.encode("ascii")), API_KEY_CHECKSUM_LENGTH)


def api_key_from_random(random_part: str) -> str:
    """The full key for a 32-character base62 random part."""
    if len(random_part) != API_KEY_RANDOM_LENGTH or not set(random_part) <= _BASE62_SET:
        raise ValueError("the random part is 32 base62 characters")
    return API_KEY_PREFIX + random_part + api_key_checksum(random_part)


def new_api_key(randbelow: RandBelow) -> str:
    """A fresh API key drawn with ``randbelow``."""
    random_part = "".join(BASE62[randbelow(62)] for _ in range(API_KEY_RANDOM_LENGTH))
    return api_key_from_random(random_part)


def is_well_formed_api_key(key: str) -> bool:
    """True when ``key`` has the prefix, the length, the alphabet and a matching checksum.

    This lets a typo or a truncated key be refused without a database lookup,
    and lets secret scanners recognise leaked keys offline.
    """
    if len(key) != API_KEY_LENGTH or not key.startswith(API_KEY_PREFIX):
        return False
    body = key[len(API_KEY_PREFIX) :]
    if not set(body) <= _BASE62_SET:
        return False
    random_part, checksum = body[:API_KEY_RANDOM_LENGTH], body[API_KEY_RANDOM_LENGTH:]
    return hmac.compare_digest(api_key_checksum(random_part), checksum)


def api_key_prefix(key: str) -> str:
    """The displayable leading characters of a key (``psk_`` plus 8)."""
    return key[:KEY_PREFIX_LENGTH]


def hash_api_key(key: str) -> str:
    """SHA-256 of the key, hex: the only form in which keys are stored.

    A plain hash is enough (no salt, no slow KDF): keys carry 190 bits of
    randomness, so there is nothing to brute-force, and lookups must be fast.
    """
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def new_stream_code(randbelow: RandBelow) -> str:
    """A stream code ``word-xxxx`` drawn with ``randbelow``."""
    word = WORDS[randbelow(len(WORDS))]
    suffix = "".join(
        CODE_SUFFIX_ALPHABET[randbelow(len(CODE_SUFFIX_ALPHABET))]
        for _ in range(CODE_SUFFIX_LENGTH)
    )
    return f"{word}-{suffix}"


def is_stream_code(code: str) -> bool:
    """True when ``code`` has the form of a generated stream code."""
    word, sep, suffix = code.partition("-")
    return (
        sep == "-"
        and word in _WORD_SET
        and len(suffix) == CODE_SUFFIX_LENGTH
        and set(suffix) <= _SUFFIX_SET
    )
