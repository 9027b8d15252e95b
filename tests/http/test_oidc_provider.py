"""The OpenID provider adapter (pushcore/outbound/oidc.py) against the fake provider:
PKCE as the provider checks it, and the discovery document held to the issuer's word."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from pushcore.domain.oidc import CALLBACK_PATH, SignInError, SignInFailed
from pushcore.outbound.guard import tls_context
from pushcore.outbound.oidc import Metadata, OidcProvider
from pushcore.runtime.system import SystemClock
from tests.fakes.oidc_provider import CLIENT_ID, CLIENT_SECRET, FakeProvider, ProviderTls, s256
from tests.fakes.oidc_provider import visit as browse
from tests.http.conftest import BASE

VERIFIER = "v" * 43


def adapter(provider: FakeProvider, tls: ProviderTls, secret: str = CLIENT_SECRET) -> OidcProvider:
    return OidcProvider(
        provider.issuer,
        CLIENT_ID,
        secret,
        BASE + CALLBACK_PATH,
        SystemClock(),
        tls_context(tls.ca_file),
    )


def authorization_code(provider: FakeProvider, tls: ProviderTls, verifier: str) -> str:
    """A code the provider grants for the challenge of ``verifier``."""
    query = {
        "response_type": "code",
        "client_id": CLIENT_ID,
        "redirect_uri": BASE + CALLBACK_PATH,
        "scope": "openid",
        "state": "s",
        "nonce": "n",
        "code_challenge": s256(verifier),
        "code_challenge_method": "S256",
    }
    location = browse(f"{provider.issuer}/authorize?{urlencode(query)}", tls.client)
    return parse_qs(urlsplit(location).query)["code"][0]


def test_the_provider_refuses_a_code_with_the_wrong_verifier(
    provider: FakeProvider, tls: ProviderTls
) -> None:
    code = authorization_code(provider, tls, VERIFIER)
    with pytest.raises(SignInFailed) as failed:
        asyncio.run(adapter(provider, tls).redeem(code, "w" * 43))
    assert failed.value.reason is SignInError.PROVIDER
    assert "invalid_grant" in str(failed.value)


def test_the_right_verifier_gets_verified_claims(provider: FakeProvider, tls: ProviderTls) -> None:
    code = authorization_code(provider, tls, VERIFIER)
    claims = asyncio.run(adapter(provider, tls).redeem(code, VERIFIER))
    assert claims["preferred_username"] == "Carol"
    assert claims["nonce"] == "n"


def test_a_wrong_client_secret_is_refused(provider: FakeProvider, tls: ProviderTls) -> None:
    code = authorization_code(provider, tls, VERIFIER)
    with pytest.raises(SignInFailed) as failed:
        asyncio.run(adapter(provider, tls, secret="wrong").redeem(code, VERIFIER))
    assert "invalid_client" in str(failed.value)


def test_tls_is_checked_against_the_configured_authorities(
    provider: FakeProvider, tls: ProviderTls
) -> None:
    # Without PUSHCORE_CA_FILE the test CA is not trusted: the provider is unreachable.
    untrusting = OidcProvider(
        provider.issuer, CLIENT_ID, CLIENT_SECRET, BASE, SystemClock(), tls_context(None)
    )
    with pytest.raises(SignInFailed) as failed:
        asyncio.run(untrusting.authorization_url("s", "n", VERIFIER))
    assert failed.value.reason is SignInError.PROVIDER


def document(**changes: Any) -> dict[str, Any]:
    base = {
        "issuer": "https://idp.example/realms/home",
        "authorization_endpoint": "https://idp.example/auth",
        "token_endpoint": "https://idp.example/token",
        "jwks_uri": "https://idp.example/certs",
    }
    return {k: v for k, v in (base | changes).items() if v is not None}


def test_discovery_defaults_and_choices() -> None:
    plain = Metadata.of(document(), "https://idp.example/realms/home/")
    assert plain.algorithms == ("RS256",)
    assert plain.auth_method == "client_secret_basic"
    chosen = Metadata.of(
        document(
            id_token_signing_alg_values_supported=["HS256", "ES256", "none"],
            token_endpoint_auth_methods_supported=["private_key_jwt", "client_secret_post"],
        ),
        "https://idp.example/realms/home",
    )
    # Never an algorithm keyed with a shared secret, nor none.
    assert chosen.algorithms == ("ES256",)
    assert chosen.auth_method == "client_secret_post"


@pytest.mark.parametrize(
    "changes",
    [
        {"issuer": "https://evil.example/realms/home"},
        {"issuer": None},
        {"token_endpoint": "http://idp.example/token"},
        {"jwks_uri": "file:///etc/passwd"},
        {"authorization_endpoint": None},
    ],
)
def test_a_discovery_document_that_cannot_be_trusted_is_refused(changes: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"issuer|https"):
        Metadata.of(document(**changes), "https://idp.example/realms/home")
