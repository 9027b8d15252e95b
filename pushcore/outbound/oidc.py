"""The OpenID provider over HTTP: discovery, the code exchange (Authlib), the ID token (joserfc).

Authlib is untyped; it is used only here, behind :class:`OidcProvider`, whose
methods take and return plain typed values (the :class:`IdentityProvider` port).

Which hosts this reaches: the issuer is the operator's configuration, not a
user's input, and a provider usually lives on the operator's own network (a
Keycloak beside pushcore), so the SSRF guard, which keeps user-given URLs off
private addresses, does not apply here, as it does not to PUSHCORE_JWKS or
the gateways' URLs. What the server itself fetches is held to the issuer's
word instead: the discovery document must name the configured issuer, its
token endpoint and key set must be https (or http on a loopback host, as the
issuer may be), and no redirect is followed. Every connection trusts the
system's roots plus PUSHCORE_CA_FILE, like the gateways'.
"""

from __future__ import annotations

import logging
import ssl
import time
import warnings
from collections.abc import Mapping
from typing import Any

import attrs
import httpx
from joserfc import jwt
from joserfc.errors import ExpiredTokenError, JoseError
from joserfc.jwk import KeySet
from joserfc.jwt import JWTClaimsRegistry

from pushcore.domain.oidc import SCOPE, SignInError, SignInFailed, is_secure_url
from pushcore.ports import Clock

with warnings.catch_warnings():
    # Authlib prefers the httpx2 fork and warns when it falls back to httpx, which is
    # what pushcore ships and what Authlib's client works on all the same. Its module
    # of warnings sets a process-wide filter when imported: imported in here, that
    # filter goes when the block ends, after ours has silenced the one warning.
    import authlib.deprecate  # noqa: F401

    warnings.simplefilter("ignore", DeprecationWarning)
    from authlib.integrations.base_client import OAuthError
    from authlib.integrations.httpx_client import AsyncOAuth2Client

log = logging.getLogger("pushcore.oidc")

HTTP_TIMEOUT = httpx.Timeout(10.0)
DISCOVERY_TTL_SECONDS = 3600.0
# Keys are fetched again for a key id not seen yet (the provider rotated), at most
# this often, so forged tokens with made-up key ids cannot make us hammer it.
KEYS_MIN_REFETCH_SECONDS = 60.0
# The provider and this service rarely share a clock to the second (as tokens.py).
CLOCK_LEEWAY_SECONDS = 30
# OpenID Connect Core 1.0 §15.1: every provider signs ID tokens with RS256 at least.
DEFAULT_ALGORITHMS = ("RS256",)
ASYMMETRIC = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
MAX_DOCUMENT_BYTES = 512 * 1024


@attrs.frozen
class Metadata:
    """What pushcore uses of the provider's discovery document."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    algorithms: tuple[str, ...]
    auth_method: str  # how the client authenticates at the token endpoint

    @classmethod
    def of(cls, document: Mapping[str, Any], configured_issuer: str) -> Metadata:
        """The metadata of ``document``; ValueError when it cannot be trusted or used."""
        issuer = document.get("issuer")
        # OpenID Connect Discovery §4.3: the document speaks for the issuer it was
        # fetched from, exactly (a trailing slash is the only leeway given).
        if not isinstance(issuer, str) or issuer.rstrip("/") != configured_issuer.rstrip("/"):
            raise ValueError(f"the discovery document names another issuer: {issuer!r}")
        endpoints = {}
        for name in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
            value = document.get(name)
            if not isinstance(value, str) or not is_secure_url(value.split("?")[0]):
                raise ValueError(f"{name} must be an https URL, not {value!r}")
            endpoints[name] = value
        offered = document.get("id_token_signing_alg_values_supported")
        algorithms = tuple(a for a in offered or () if a in ASYMMETRIC) or DEFAULT_ALGORITHMS
        methods = document.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
        basic = "client_secret_basic" in methods or "client_secret_post" not in methods
        return cls(
            issuer=issuer,
            algorithms=algorithms,
            auth_method="client_secret_basic" if basic else "client_secret_post",
            **endpoints,
        )


class OidcProvider:
    """The :class:`pushcore.ports.IdentityProvider` of one configured issuer.

    The discovery document is cached for an hour and the key set until a token
    names a key it lacks; both live in this process (each API process fetches
    its own copy: there is nothing secret or shared to keep in the database).
    """

    def __init__(
        self,
        issuer: str,
        client_id: str,
        client_secret: str,
        redirect_uri: str,
        clock: Clock,
        tls: ssl.SSLContext,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._issuer = issuer
        self._client_id = client_id
        self._client_secret = client_secret
        self._redirect_uri = redirect_uri
        self._clock = clock
        self._http: dict[str, Any] = {
            "verify": tls,
            "timeout": HTTP_TIMEOUT,
            "trust_env": False,  # no proxy from the environment between us and the provider
            "follow_redirects": False,
        }
        if transport is not None:
            self._http["transport"] = transport
        self._metadata: Metadata | None = None
        self._metadata_at = 0.0
        self._keys: KeySet | None = None
        self._keys_at = 0.0

    @property
    def discovery_url(self) -> str:
        """Where the provider's discovery document is (OpenID Connect Discovery §4)."""
        return self._issuer.rstrip("/") + "/.well-known/openid-configuration"

    async def authorization_url(self, state: str, nonce: str, verifier: str) -> str:
        """See :class:`pushcore.ports.IdentityProvider`."""
        metadata = await self.metadata()
        async with self._oauth(metadata) as client:
            url, _ = client.create_authorization_url(
                metadata.authorization_endpoint, state=state, code_verifier=verifier, nonce=nonce
            )
        return str(url)

    async def redeem(self, code: str, verifier: str) -> Mapping[str, object]:
        """See :class:`pushcore.ports.IdentityProvider`."""
        metadata = await self.metadata()
        try:
            async with self._oauth(metadata) as client:
                answer = await client.fetch_token(
                    metadata.token_endpoint,
                    grant_type="authorization_code",
                    code=code,
                    code_verifier=verifier,
                )
        except OAuthError as exc:
            # The provider's own error word (invalid_grant, ...): never the code itself.
            raise SignInFailed(SignInError.PROVIDER, f"token endpoint: {exc.error}") from None
        except (httpx.HTTPError, ValueError) as exc:
            raise SignInFailed(SignInError.PROVIDER, f"token endpoint: {_kind(exc)}") from None
        id_token = answer.get("id_token") if isinstance(answer, Mapping) else None
        if not isinstance(id_token, str):
            raise SignInFailed(SignInError.PROVIDER, "the token endpoint gave no ID token")
        return await self._verify(id_token, metadata)

    async def metadata(self) -> Metadata:
        """The provider's metadata, from its discovery document (cached)."""
        now = time.monotonic()
        if self._metadata is None or now - self._metadata_at > DISCOVERY_TTL_SECONDS:
            try:
                document = await self._get_json(self.discovery_url)
                self._metadata = Metadata.of(document, self._issuer)
            except (httpx.HTTPError, ValueError) as exc:
                if self._metadata is None:
                    raise SignInFailed(
                        SignInError.PROVIDER, f"discovery at {self.discovery_url}: {_kind(exc)}"
                    ) from None
                # A provider down for a moment: the copy we have is as good as an hour ago.
                log.warning("single sign-on: discovery failed, keeping the copy: %s", _kind(exc))
            self._metadata_at = now
        return self._metadata

    async def _key_set(self, metadata: Metadata, refresh: bool) -> KeySet:
        now = time.monotonic()
        due = refresh and now - self._keys_at > KEYS_MIN_REFETCH_SECONDS
        if self._keys is None or due:
            try:
                self._keys = KeySet.import_key_set(await self._get_json(metadata.jwks_uri))  # type: ignore[arg-type]
            except (httpx.HTTPError, ValueError, JoseError) as exc:
                if self._keys is None:
                    raise SignInFailed(SignInError.PROVIDER, f"keys: {_kind(exc)}") from None
            self._keys_at = now
        return self._keys

    async def _verify(self, id_token: str, metadata: Metadata) -> Mapping[str, object]:
        """The claims of ``id_token`` once its signature, issuer, audience and times hold."""
        algorithms = list(metadata.algorithms)
        try:
            try:
                decoded = jwt.decode(id_token, await self._key_set(metadata, False), algorithms)
            except JoseError:
                # The provider may have rotated its keys since we fetched them.
                decoded = jwt.decode(id_token, await self._key_set(metadata, True), algorithms)
            self._registry(metadata.issuer).validate(decoded.claims)
        except ExpiredTokenError:
            # Only once the signature held: an expiry says nothing to a forger.
            raise SignInFailed(SignInError.EXPIRED, "the ID token has expired") from None
        except (JoseError, ValueError, TypeError, KeyError) as exc:
            raise SignInFailed(SignInError.TOKEN, f"ID token: {_kind(exc)}") from None
        claims: dict[str, object] = decoded.claims
        audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
        # OpenID Connect Core §3.1.3.7: with other audiences, the token must say it was
        # issued to us (azp); when it says so, it must be us.
        azp = claims.get("azp")
        if (len(audiences) > 1 or azp is not None) and azp != self._client_id:
            raise SignInFailed(SignInError.TOKEN, "ID token: issued to another client (azp)")
        return claims

    def _registry(self, issuer: str) -> JWTClaimsRegistry:
        return JWTClaimsRegistry(
            now=lambda: int(self._clock.now().timestamp()),
            leeway=CLOCK_LEEWAY_SECONDS,
            iss={"essential": True, "value": issuer},
            aud={"essential": True, "value": self._client_id},
            exp={"essential": True},
            iat={"essential": True},
            sub={"essential": True},
        )

    def _oauth(self, metadata: Metadata) -> Any:
        """Authlib's OAuth 2.0 client for one exchange (an httpx client underneath)."""
        return AsyncOAuth2Client(
            client_id=self._client_id,
            client_secret=self._client_secret,
            token_endpoint_auth_method=metadata.auth_method,
            scope=SCOPE,
            redirect_uri=self._redirect_uri,
            code_challenge_method="S256",
            **self._http,
        )

    async def _get_json(self, url: str) -> Mapping[str, Any]:
        async with httpx.AsyncClient(**self._http) as client:
            response = await client.get(url, headers={"Accept": "application/json"})
        response.raise_for_status()
        if len(response.content) > MAX_DOCUMENT_BYTES:
            raise ValueError(f"{url}: over {MAX_DOCUMENT_BYTES} bytes")
        document = response.json()
        if not isinstance(document, dict):
            raise ValueError(f"{url}: not a JSON object")
        return document


def _kind(exc: Exception) -> str:
    """What went wrong, for a log line: the error's class and message. None of the
    errors caught here carries a request body, so no code or token is in it."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
