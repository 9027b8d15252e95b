"""Field validators for request inputs, with messages meant for people.

They are attrs validators (``(instance, attribute, value)``) that raise
:class:`ValueError`; the converter runs each one on its own field so that a
response can list every invalid field at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

Validator = Callable[[Any, Any, Any], None]


def text(min_len: int, max_len: int) -> Validator:
    """A string of ``min_len`` to ``max_len`` characters (None passes: optional fields)."""

    def check(_inst: Any, _attr: Any, value: Any) -> None:
        if value is None:
            return
        if not min_len <= len(value) <= max_len:
            if min_len == 0:
                raise ValueError(f"must be at most {max_len} characters")
            raise ValueError(f"must be {min_len} to {max_len} characters")

    return check


def not_blank(_inst: Any, _attr: Any, value: Any) -> None:
    """Refuses a string made only of white space."""
    if value is not None and not value.strip():
        raise ValueError("must not be blank")


def int_range(low: int, high: int) -> Validator:
    """An integer from ``low`` to ``high`` inclusive (None passes)."""

    def check(_inst: Any, _attr: Any, value: Any) -> None:
        if value is not None and not low <= value <= high:
            raise ValueError(f"must be from {low} to {high}")

    return check


def http_url(_inst: Any, _attr: Any, value: Any) -> None:
    """An absolute http(s) URL with a host (None passes)."""
    if value is None:
        return
    if len(value) > 2048:
        raise ValueError("must be at most 2048 characters")
    try:
        parts = urlsplit(value)
        host = parts.hostname
        parts.port  # noqa: B018  (a bad port raises ValueError here)
    except ValueError as exc:
        raise ValueError("must be an http or https URL") from exc
    if parts.scheme not in ("http", "https") or not host:
        raise ValueError("must be an http or https URL")


def string_map(max_keys: int, max_bytes: int) -> Validator:
    """A mapping of strings with at most ``max_keys`` keys and ``max_bytes`` UTF-8 bytes."""

    def check(_inst: Any, _attr: Any, value: Mapping[str, str] | None) -> None:
        if value is None:
            return
        if len(value) > max_keys:
            raise ValueError(f"must have at most {max_keys} keys")
        size = sum(len(k.encode()) + len(v.encode()) for k, v in value.items())
        if size > max_bytes:
            raise ValueError(f"must be at most {max_bytes} bytes of keys and values in all")

    return check


def all_of(*validators: Validator) -> Validator:
    """Runs ``validators`` in order; the first failure is the field's message."""

    def check(inst: Any, attr: Any, value: Any) -> None:
        for validator in validators:
            validator(inst, attr, value)

    return check
