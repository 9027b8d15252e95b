"""A fake OpenID provider over HTTPS on loopback, speaking the real protocol.

Discovery (``/.well-known/openid-configuration``), its key set (``/jwks``), the
authorization endpoint (``/authorize``: checks the client, the registered
redirect URI, ``response_type=code``, the ``openid`` scope and an S256 PKCE
challenge, "signs in" :attr:`FakeProvider.user` at once and redirects back
with a code and the state), and the token endpoint (``/token``: checks the
client's credentials, Basic or in the body, the code (once, unexpired, for
this redirect URI) and the PKCE verifier against the challenge, and issues an
RS256 ID token with the nonce, as OAuth 2.0 and OpenID Connect Core say).
Errors are the protocol's own JSON bodies (``invalid_client``,
``invalid_grant``...). Tests steer the next ID token's claims
(:attr:`FakeProvider.claims_override`) and read what was issued.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import http.client
import json
import secrets
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

import attrs
import trustme
from joserfc import jwt
from joserfc.jwk import RSAKey

from tests.fakes.serving import serving

CLIENT_ID = "pushcore"
CLIENT_SECRET = "fake-client-secret-0123456789abcdef"
CODE_SECONDS = 60
Answer = tuple[int, dict[str, str], bytes]


def s256(verifier: str) -> str:
    """The PKCE S256 challenge of ``verifier`` (RFC 7636 §4.2)."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


@attrs.frozen
class Grant:
    """An authorization code as the provider remembers it."""

    redirect_uri: str
    challenge: str
    nonce: str | None
    issued_at: float


@functools.cache
def provider_key() -> RSAKey:
    """The providers' signing key, made once per process: a 2048-bit RSA key is 50 ms of
    CPU, and no test runs two providers at once (a forger's key is made apart)."""
    return RSAKey.generate_key(2048, parameters={"kid": "k1"})


@attrs.define
class FakeProvider:
    """The provider's state; :func:`running_provider` serves it."""

    redirect_uris: tuple[str, ...]
    host: str = "127.0.0.1"
    port: int = 0
    client_id: str = CLIENT_ID
    client_secret: str = CLIENT_SECRET
    key: RSAKey = attrs.Factory(provider_key)
    user: dict[str, Any] = attrs.Factory(
        lambda: {
            "sub": "f3a1-uuid",
            "preferred_username": "Carol",
            "email": "carol@example.com",
            "email_verified": True,
        }
    )
    # Claims of the next ID tokens overridden (None removes one): a test's tampering.
    claims_override: dict[str, Any] = attrs.Factory(dict)
    deny: bool = False  # the person declines at the provider
    grants: dict[str, Grant] = attrs.Factory(dict)
    # Every secret the provider handed out or was sent, for the tests that look for leaks.
    secrets_seen: list[str] = attrs.Factory(list)
    token_requests: list[dict[str, str]] = attrs.Factory(list)
    lock: threading.Lock = attrs.Factory(threading.Lock)

    @property
    def issuer(self) -> str:
        """The issuer URL (PUSHCORE_OIDC_ISSUER)."""
        return f"https://{self.host}:{self.port}"

    def discovery(self) -> dict[str, Any]:
        """The discovery document."""
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "jwks_uri": f"{self.issuer}/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "scopes_supported": ["openid", "profile", "email"],
        }

    def authorize(self, query: dict[str, str]) -> Answer:
        """The authorization endpoint: a redirect back with a code (or an error)."""
        redirect_uri = query.get("redirect_uri", "")
        if query.get("client_id") != self.client_id or redirect_uri not in self.redirect_uris:
            # Never redirect to an unregistered URI (RFC 6749 §4.1.2.1): an error page.
            return 400, {"Content-Type": "text/plain"}, b"unknown client or redirect_uri"
        back: dict[str, str] = {}
        if "state" in query:
            back["state"] = query["state"]
        problem = self._authorize_problem(query)
        if problem is not None or self.deny:
            back["error"] = problem or "access_denied"
        else:
            code = secrets.token_urlsafe(24)
            with self.lock:
                self.grants[code] = Grant(
                    redirect_uri, query["code_challenge"], query.get("nonce"), time.time()
                )
                self.secrets_seen.append(code)
            back["code"] = code
        return 302, {"Location": f"{redirect_uri}?{urlencode(back)}"}, b""

    @staticmethod
    def _authorize_problem(query: dict[str, str]) -> str | None:
        if query.get("response_type") != "code":
            return "unsupported_response_type"
        if "openid" not in query.get("scope", "").split():
            return "invalid_scope"
        if query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
            return "invalid_request"
        return None

    def token(self, authorization: str | None, form: dict[str, str]) -> Answer:
        """The token endpoint: an ID token for a good code, verifier and client."""
        with self.lock:
            self.token_requests.append(form)
        if not self._client_ok(authorization, form):
            return _error(401, "invalid_client")
        if form.get("grant_type") != "authorization_code":
            return _error(400, "unsupported_grant_type")
        with self.lock:
            # A code is good once, whatever happens next (RFC 6749 §4.1.2).
            grant = self.grants.pop(form.get("code", ""), None)
        if grant is None or time.time() - grant.issued_at > CODE_SECONDS:
            return _error(400, "invalid_grant")
        if form.get("redirect_uri") != grant.redirect_uri:
            return _error(400, "invalid_grant")
        verifier = form.get("code_verifier", "")
        if not 43 <= len(verifier) <= 128 or s256(verifier) != grant.challenge:
            return _error(400, "invalid_grant")
        now = int(time.time())
        claims = {
            **self.user,
            "iss": self.issuer,
            "aud": self.client_id,
            "iat": now,
            "exp": now + 300,
            "auth_time": now,
        }
        if grant.nonce is not None:
            claims["nonce"] = grant.nonce
        claims.update(self.claims_override)
        claims = {k: v for k, v in claims.items() if v is not None}
        id_token = jwt.encode({"alg": "RS256", "kid": self.key.kid}, claims, self.key)
        access_token = secrets.token_urlsafe(32)
        with self.lock:
            self.secrets_seen += [id_token, access_token]
        body = {
            "access_token": access_token,
            "token_type": "Bearer",
            "expires_in": 300,
            "id_token": id_token,
            "scope": "openid profile email",
        }
        return _json(200, body)

    def _client_ok(self, authorization: str | None, form: dict[str, str]) -> bool:
        if authorization is not None and authorization.startswith("Basic "):
            decoded = base64.b64decode(authorization[6:]).decode()
            client_id, _, secret = decoded.partition(":")
            # RFC 6749 §2.3.1: each is form-urlencoded before the Basic encoding.
            given = (unquote(client_id.replace("+", " ")), unquote(secret.replace("+", " ")))
        else:
            given = (form.get("client_id", ""), form.get("client_secret", ""))
        return given == (self.client_id, self.client_secret)


def _json(status: int, body: Any) -> Answer:
    return (
        status,
        {"Content-Type": "application/json", "Cache-Control": "no-store"},
        (json.dumps(body).encode()),
    )


def _error(status: int, error: str) -> Answer:
    return _json(status, {"error": error})


def _handler(fake: FakeProvider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            query = {k: v[0] for k, v in parse_qs(parts.query).items()}
            if parts.path == "/.well-known/openid-configuration":
                self._answer(_json(200, fake.discovery()))
            elif parts.path == "/jwks":
                self._answer(_json(200, {"keys": [fake.key.as_dict(private=False)]}))
            elif parts.path == "/authorize":
                self._answer(fake.authorize(query))
            else:
                self._answer(_error(404, "not_found"))

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length", "0")))
            if urlsplit(self.path).path != "/token":
                self._answer(_error(404, "not_found"))
                return
            form = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
            self._answer(fake.token(self.headers.get("authorization"), form))

        def _answer(self, answer: Answer) -> None:
            status, headers, body = answer
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: tests read the provider's records instead."""

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients hanging up are expected here."""


@contextmanager
def running_provider(
    cert: ssl.SSLContext, redirect_uris: tuple[str, ...]
) -> Iterator[FakeProvider]:
    """A fake provider on a free loopback port; ``cert`` is a server-side context with a
    certificate for 127.0.0.1; ``redirect_uris`` are the client's registered ones."""
    fake = FakeProvider(redirect_uris)
    server = _Server((fake.host, 0), _handler(fake))
    fake.port = server.server_address[1]
    server.socket = cert.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    with serving(server):
        yield fake


@attrs.frozen
class ProviderTls:
    """A test CA: the provider's server context, and the CA file pushcore trusts."""

    server: ssl.SSLContext
    client: ssl.SSLContext
    ca_file: Path


def provider_tls(directory: Path) -> ProviderTls:
    """A fresh CA in ``directory`` with a certificate for 127.0.0.1."""
    ca = trustme.CA()
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server)
    client = ssl.create_default_context()
    ca.configure_trust(client)
    ca_file = directory / "provider-ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    return ProviderTls(server, client, ca_file)


def visit(url: str, context: ssl.SSLContext) -> str:
    """What a browser does at the provider: GET ``url``, and the Location it is sent to.

    http.client, not httpx: the test's own requests then leave nothing in the logs
    that the leak tests read."""
    parts = urlsplit(url)
    assert parts.hostname is not None
    connection = http.client.HTTPSConnection(parts.hostname, parts.port, context=context)
    try:
        connection.request("GET", f"{parts.path}?{parts.query}")
        response = connection.getresponse()
        response.read()
        assert response.status == 302, response.status
        location = response.getheader("Location")
        assert location is not None
        return location
    finally:
        connection.close()
