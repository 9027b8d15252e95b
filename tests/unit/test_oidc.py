"""Single sign-on's pure rules, its settings and the access log's filter."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pushcore import load_settings
from pushcore.domain.errors import ConfigError
from pushcore.domain.oidc import (
    DEFAULT_NEXT,
    SignInError,
    SignInFailed,
    account_from_claims,
    hash_secret,
    is_secure_url,
    is_well_formed_secret,
    matches,
    new_secret,
    safe_next,
)
from pushcore_http.routes.oidc import HideCallbackQueries

SITE = "https://push.example/"


@given(st.text(max_size=60))
def test_next_never_leaves_the_site(raw: str) -> None:
    kept = safe_next(raw)
    # As a browser resolves it against the site, and as it reads backslashes.
    resolved = urlsplit(urljoin(SITE, kept.replace("\\", "/")))
    assert (resolved.scheme, resolved.netloc) == ("https", "push.example")
    assert "#" not in kept


@pytest.mark.parametrize(
    "raw", ["/app/", "/app/subscribe/falcon-7k2q", "/app/?tab=streams&x=%2F", "/"]
)
def test_paths_of_the_site_are_kept(raw: str) -> None:
    assert safe_next(raw) == raw


@pytest.mark.parametrize(
    "raw",
    [None, "", "app", "//evil.example", "/\\evil.example", "https://evil.example/",
     "/app/#fragment", "/app/\t", "/" + "a" * 2001, "/app/\u00e9"],
)  # fmt: skip
def test_anything_else_is_the_app(raw: str | None) -> None:
    assert safe_next(raw) == DEFAULT_NEXT


def test_secrets_are_fresh_well_formed_and_kept_as_hashes() -> None:
    from random import Random

    draw = Random(3).randrange
    first, second = new_secret(draw), new_secret(draw)
    assert first != second
    assert is_well_formed_secret(first)
    assert not is_well_formed_secret(first + "=")
    assert matches(first, hash_secret(first))
    assert not matches(second, hash_secret(first))


@pytest.mark.parametrize(
    ("claims", "expected"),
    [({"preferred_username": "Carol.O'Neil"}, "Carol.O'Neil"), ({"preferred_username": "x"}, "x")],
)
def test_the_account_is_the_claim_as_given(claims: dict[str, Any], expected: str) -> None:
    assert account_from_claims(claims, "preferred_username") == expected


@pytest.mark.parametrize("value", [None, "", 12, ["a"], "a\x00b", "x" * 256])
def test_an_unusable_claim_is_refused(value: object) -> None:
    with pytest.raises(SignInFailed) as failed:
        account_from_claims({"preferred_username": value}, "preferred_username")
    assert failed.value.reason is SignInError.ACCOUNT


@pytest.mark.parametrize(
    ("url", "secure"),
    [("https://idp.example", True), ("http://127.0.0.1:8080/realms/x", True),
     ("http://localhost:8080", True), ("http://[::1]:8080", True),
     ("http://idp.example", False), ("http://10.0.0.5", False), ("ftp://idp.example", False),
     ("https://", False), ("https://idp.example/?x=1", False)],
)  # fmt: skip
def test_secure_urls(url: str, secure: bool) -> None:
    assert is_secure_url(url) is secure


SSO = {
    "oidc_issuer": "https://idp.example/realms/home",
    "oidc_client_id": "pushcore",
    "oidc_client_secret": "s3cret",
    "public_url": "https://push.example",
}


def sso_settings(tmp_path: Path, **changes: Any) -> Any:
    values = {k: v for k, v in (SSO | changes).items() if v is not None}
    return load_settings(env={}, data_dir=tmp_path, **values)


def test_sso_settings(tmp_path: Path) -> None:
    settings = sso_settings(tmp_path, public_url="https://push.example/prefix/")
    assert settings.oidc_enabled
    assert settings.public_base == "https://push.example/prefix"
    assert (settings.oidc_name, settings.oidc_account_claim) == (
        "Single sign-on",
        "preferred_username",
    )
    assert "s3cret" not in repr(settings)
    assert not load_settings(env={}, data_dir=tmp_path).oidc_enabled


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"oidc_client_secret": None}, "PUSHCORE_OIDC_CLIENT_SECRET"),
        ({"oidc_issuer": None}, "PUSHCORE_OIDC_ISSUER"),
        ({"oidc_issuer": "http://idp.example"}, "PUSHCORE_OIDC_ISSUER"),
        ({"public_url": None}, "PUSHCORE_PUBLIC_URL"),
        ({"public_url": "push.example"}, "PUSHCORE_PUBLIC_URL"),
        ({"public_url": "https://push.example/?x"}, "PUSHCORE_PUBLIC_URL"),
        ({"oidc_name": "x" * 101}, "PUSHCORE_OIDC_NAME"),
        ({"oidc_account_claim": " "}, "PUSHCORE_OIDC_ACCOUNT_CLAIM"),
    ],
)
def test_wrong_sso_settings_are_named(tmp_path: Path, changes: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        sso_settings(tmp_path, **changes)


def test_the_environment_configures_sso(tmp_path: Path) -> None:
    env = {
        "PUSHCORE_OIDC_ISSUER": "https://idp.example",
        "PUSHCORE_OIDC_CLIENT_ID": "pushcore",
        "PUSHCORE_OIDC_CLIENT_SECRET": "s3cret",
        "PUSHCORE_OIDC_NAME": "Company login",
        "PUSHCORE_OIDC_ACCOUNT_CLAIM": "email",
        "PUSHCORE_PUBLIC_URL": "https://push.example",
    }
    settings = load_settings(env=env, data_dir=tmp_path)
    assert (settings.oidc_name, settings.oidc_account_claim) == ("Company login", "email")


def test_the_access_log_keeps_no_callback_query() -> None:
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5", "GET", "/api/auth/oidc/callback?code=SECRET&state=S", "1.1", 302),
        None,
    )
    assert HideCallbackQueries().filter(record)
    assert "SECRET" not in record.getMessage()
    assert "/api/auth/oidc/callback" in record.getMessage()
    other = logging.LogRecord(
        "uvicorn.access", logging.INFO, __file__, 1, "%s", ("/api/keys?x=1",), None
    )
    assert HideCallbackQueries().filter(other)
    assert other.getMessage() == "/api/keys?x=1"
