"""Field validators (pushcore.domain.validation) and small model behaviour."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pushcore.domain import validation as v
from pushcore.domain.model import Device, Platform


def run(validator: v.Validator, value: Any) -> str | None:
    """The validator's message for ``value``, or None when it passes."""
    try:
        validator(None, None, value)
    except ValueError as exc:
        return str(exc)
    return None


@given(st.text(max_size=30), st.integers(0, 10), st.integers(0, 20))
def test_text_checks_the_length(value: str, low: int, extra: int) -> None:
    high = low + extra
    message = run(v.text(low, high), value)
    if low <= len(value) <= high:
        assert message is None
    elif low == 0:
        assert message == f"must be at most {high} characters"
    else:
        assert message == f"must be {low} to {high} characters"


def test_text_passes_none() -> None:
    assert run(v.text(1, 5), None) is None


@pytest.mark.parametrize(
    ("value", "ok"), [("a", True), (" a ", True), ("", False), (" \t\n", False)]
)
def test_not_blank(value: str, ok: bool) -> None:
    assert (run(v.not_blank, value) is None) == ok
    assert run(v.not_blank, None) is None


@given(st.integers(-100, 100))
def test_int_range_is_inclusive(value: int) -> None:
    message = run(v.int_range(1, 86_400), value)
    assert (message is None) == (1 <= value <= 86_400)
    if message is not None:
        assert message == "must be from 1 to 86400"


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com",
        "https://example.com/path?q=1#f",
        "https://127.0.0.1:8443/x",
        "https://[::1]:443/",
        "https://" + "a" * 2030 + ".com",
    ],
)
def test_http_url_accepts(url: str) -> None:
    assert len(url) <= 2048
    assert run(v.http_url, url) is None


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("example.com", "must be an http or https URL"),
        ("ftp://example.com", "must be an http or https URL"),
        ("javascript:alert(1)", "must be an http or https URL"),
        ("https://", "must be an http or https URL"),
        ("http://[::1", "must be an http or https URL"),
        ("http://example.com:99999/", "must be an http or https URL"),
        ("http://example.com:port/", "must be an http or https URL"),
        ("https://" + "a" * 2041, "must be at most 2048 characters"),
    ],
)
def test_http_url_refuses(url: str, message: str) -> None:
    assert run(v.http_url, url) == message
    assert run(v.http_url, None) is None


def test_string_map_limits() -> None:
    check = v.string_map(50, 4096)
    assert run(check, None) is None
    assert run(check, {}) is None
    assert run(check, {f"k{i}": "v" for i in range(50)}) is None
    assert run(check, {f"k{i}": "v" for i in range(51)}) == "must have at most 50 keys"
    assert run(check, {"k": "v" * 4095}) is None
    assert run(check, {"k": "v" * 4096}) == ("must be at most 4096 bytes of keys and values in all")
    # Bytes, not characters: "é" is two bytes in UTF-8.
    assert run(check, {"k": "é" * 2048}) is not None
    assert run(check, {"k": "é" * 2047 + "v"}) is None


def test_all_of_reports_the_first_failure() -> None:
    check = v.all_of(v.text(1, 3), v.not_blank)
    assert run(check, "abc") is None
    assert run(check, "abcd") == "must be 1 to 3 characters"
    assert run(check, "  ") == "must not be blank"


def test_device_token_prefix() -> None:
    device = Device(
        id="dev_1",
        account_id="alice",
        platform=Platform.ANDROID,
        token="abcdefghijkl",
        name=None,
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    assert device.token_prefix == "abcdefgh"
    assert device.is_active
