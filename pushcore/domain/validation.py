"""Field validators for request inputs, with messages meant for people.

They are attrs validators (``(instance, attribute, value)``) that raise
:class:`ValueError`; the converter runs each one on its own field so that a
response can list every invalid field at once. Each also states what it
enforces as JSON Schema keywords (:attr:`Rule.schema`), and :func:`about`
adds what a field means, so that the API's schema is made from the very
declaration the converter checks (``pushcore.converter.json_schema``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

Validator = Callable[[Any, Any, Any], None]

# Field metadata: what a field means and the schema facts no rule states.
SCHEMA = "pushcore_schema"
# Field metadata: an object field whose own fields' errors are named inside it
# (`deliverAt.localTime`), not the object as a whole.
NESTED = "pushcore_nested"
# Field metadata: the field in one line, where a terse place (pushctl's --help) shows it.
SHORT = "pushcore_short"

URL_MAX = 2048
_PORT = "(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[0-9]{1,4})"
_HOST = r"[A-Za-z0-9._~%!$&'()*+,;=-]"
# Every URL this matches is one http_url takes: an ASCII host (IDNs in punycode),
# an optional user and port, no white space. http_url takes a few more (IPv6
# literals), which the schema does not promise.
URL_PATTERN = rf"^https?://(({_HOST}|:)*@)?{_HOST}+(:{_PORT})?([/?#]\S*)?$"


class Rule:
    """A validator that also says what it enforces: JSON Schema keywords and words for people."""

    def __init__(self, check: Callable[[Any], None], schema: Mapping[str, Any], note: str = ""):
        self.check = check
        self.schema = dict(schema)
        self.note = note

    def __call__(self, _inst: Any, _attr: Any, value: Any) -> None:
        if value is not None:  # None passes: optional fields
            self.check(value)


def about(
    description: str = "", *, example: Any = None, short: str = "", **facts: Any
) -> dict[str, Any]:
    """Field metadata: what the field means (and ``short``, in one line for a command's
    help), an example, any other JSON Schema keyword."""
    if description:
        facts["description"] = description
    if example is not None:
        facts["examples"] = [example]
    return {SCHEMA: facts, SHORT: short or description}


def short_help(metadata: Mapping[str, Any]) -> str:
    """A field's one line for people: its ``short`` words, else its description."""
    return str(metadata.get(SHORT, ""))


def text(min_len: int, max_len: int) -> Rule:
    """A string of ``min_len`` to ``max_len`` characters."""

    def check(value: str) -> None:
        if not min_len <= len(value) <= max_len:
            if min_len == 0:
                raise ValueError(f"must be at most {max_len} characters")
            raise ValueError(f"must be {min_len} to {max_len} characters")

    return Rule(check, {"minLength": min_len, "maxLength": max_len})


# A character that is not white space, spelled out: regular expressions disagree on
# \s (JavaScript's and Rust's leave out U+001C to U+001F, which str.strip() takes).
NOT_BLANK = r"[^\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
_NOT_BLANK = re.compile(NOT_BLANK)


def _not_blank(value: str) -> None:
    if not _NOT_BLANK.search(value):
        raise ValueError("must not be blank")


not_blank = Rule(_not_blank, {"pattern": NOT_BLANK}, "Not only white space.")
"""Refuses a string made only of white space."""


def int_range(low: int, high: int) -> Rule:
    """An integer from ``low`` to ``high`` inclusive."""

    def check(value: int) -> None:
        if not low <= value <= high:
            raise ValueError(f"must be from {low} to {high}")

    return Rule(check, {"minimum": low, "maximum": high})


def _http_url(value: str) -> None:
    if len(value) > URL_MAX:
        raise ValueError(f"must be at most {URL_MAX} characters")
    try:
        parts = urlsplit(value)
        host = parts.hostname
        parts.port  # noqa: B018  (a bad port raises ValueError here)
    except ValueError as exc:
        raise ValueError("must be an http or https URL") from exc
    if parts.scheme not in ("http", "https") or not host:
        raise ValueError("must be an http or https URL")


http_url = Rule(_http_url, {"format": "uri", "maxLength": URL_MAX, "pattern": URL_PATTERN})
"""An absolute http(s) URL with a host."""


def string_map(max_keys: int, max_bytes: int) -> Rule:
    """A mapping of strings with at most ``max_keys`` keys and ``max_bytes`` UTF-8 bytes."""

    def check(value: Mapping[str, str]) -> None:
        if len(value) > max_keys:
            raise ValueError(f"must have at most {max_keys} keys")
        size = sum(len(k.encode()) + len(v.encode()) for k, v in value.items())
        if size > max_bytes:
            raise ValueError(f"must be at most {max_bytes} bytes of keys and values in all")

    # JSON Schema cannot count bytes across keys and values: that one is said in words.
    note = f"At most {max_bytes} bytes (UTF-8) of keys and values in all."
    return Rule(check, {"maxProperties": max_keys}, note)


def items(low: int, high: int, what: str) -> Rule:
    """An array of ``low`` to ``high`` items (``what`` names them in the message)."""

    def check(value: Any) -> None:
        if not low <= len(value) <= high:
            raise ValueError(f"must hold {low} to {high} {what}, not {len(value)}")

    return Rule(check, {"minItems": low, "maxItems": high})


def all_of(*rules: Rule) -> Rule:
    """Runs ``rules`` in order (the first failure is the field's message); enforces all."""

    def check(value: Any) -> None:
        for rule in rules:
            rule.check(value)

    schema = {k: v for rule in rules for k, v in rule.schema.items()}
    return Rule(check, schema, " ".join(r.note for r in rules if r.note))
