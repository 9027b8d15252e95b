"""A fake of Google's OAuth token endpoint and FCM's HTTP v1 send endpoint, over HTTPS.

It checks what the real services check, so a gateway that passes here
speaks the real protocol: the JWT-bearer grant (RS256 signature against the
service account's public key, ``kid``, ``iss``, ``scope``, ``aud``, ``iat``
and ``exp``), bearer tokens it issued and that have not expired, the
project in the path, and the v1 message schema (a token, string-only
``data`` without reserved keys, within FCM's 4096-byte limit, a known
``android.priority``, no unknown fields). Errors are FCM's own JSON bodies
(``ERRORS``), injected per device token. Time comes from an injected clock,
so token expiry follows the test's fake clock.

It speaks HTTP/1.1 only; a client asking for h2 falls back through ALPN.
"""

from __future__ import annotations

import json
import secrets
import ssl
import threading
import time
from collections import defaultdict, deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

import attrs
from joserfc import jws, jwt
from joserfc.errors import JoseError
from joserfc.jwk import RSAKey

from pushcore.ports import Clock
from pushcore.runtime.system import SystemClock

TOKEN_PATH = "/token"
FCM_SCOPE = "https://www.googleapis.com/auth/firebase.messaging"
JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
FCM_ERROR_TYPE = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
BAD_REQUEST_TYPE = "type.googleapis.com/google.rpc.BadRequest"
MESSAGE_FIELDS = frozenset(
    {"name", "data", "notification", "android", "webpush", "apns", "fcm_options"}
    | {"token", "topic", "condition"}
)
ANDROID_FIELDS = frozenset(
    {"collapse_key", "priority", "ttl", "restricted_package_name", "data", "notification"}
    | {"fcm_options", "direct_boot_ok"}
)
RESERVED_DATA_KEYS = frozenset({"from", "notification", "message_type"})
MAX_DATA_BYTES = 4096

# FCM's errors as the service sends them: errorCode -> (HTTP status, RPC status, message).
ERRORS: dict[str, tuple[int, str, str]] = {
    "UNREGISTERED": (404, "NOT_FOUND", "Requested entity was not found."),
    "INVALID_ARGUMENT": (
        400,
        "INVALID_ARGUMENT",
        "The registration token is not a valid FCM registration token",
    ),
    "SENDER_ID_MISMATCH": (403, "PERMISSION_DENIED", "SenderId mismatch"),
    "QUOTA_EXCEEDED": (
        429,
        "RESOURCE_EXHAUSTED",
        "Quota exceeded for quota metric 'Send requests' of service fcm.googleapis.com",
    ),
    "UNAVAILABLE": (503, "UNAVAILABLE", "The service is currently unavailable."),
    "INTERNAL": (500, "INTERNAL", "Internal error encountered."),
    "THIRD_PARTY_AUTH_ERROR": (401, "UNAUTHENTICATED", "Auth error from APNS or Web Push Service"),
}


def fcm_error_body(
    status: int, rpc_status: str, message: str, error_code: str | None = None
) -> dict[str, Any]:
    """An error body as FCM writes it (``details`` carries the FcmError when given)."""
    details: list[dict[str, Any]] = []
    if error_code is not None:
        details.append({"@type": FCM_ERROR_TYPE, "errorCode": error_code})
    return {"error": {"code": status, "message": message, "status": rpc_status, "details": details}}


@attrs.frozen
class Injected:
    """A scripted answer of the send endpoint."""

    status: int
    body: dict[str, Any]
    retry_after: str | None = None


def fcm_error(error_code: str, retry_after: str | None = None) -> Injected:
    """FCM's answer for ``error_code`` (a key of ERRORS)."""
    status, rpc_status, message = ERRORS[error_code]
    return Injected(status, fcm_error_body(status, rpc_status, message, error_code), retry_after)


def make_service_account(
    token_uri: str,
    project_id: str = "pushcore-test",
    client_email: str = "pushcore@pushcore-test.iam.gserviceaccount.com",
    key: RSAKey | None = None,
) -> dict[str, str]:
    """A service-account key file's JSON object, with a fresh RSA key unless one is given."""
    key = key or RSAKey.generate_key(2048)
    pem = key.as_pem(private=True)
    return {
        "type": "service_account",
        "project_id": project_id,
        "private_key_id": secrets.token_hex(20),
        "private_key": pem.decode() if isinstance(pem, bytes) else pem,
        "client_email": client_email,
        "client_id": "1234567890",
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": token_uri,
    }


@attrs.frozen
class Received:
    """One message the send endpoint accepted (or answered with an injected error)."""

    message: dict[str, Any]
    access_token: str
    status: int


@attrs.frozen
class _Account:
    project_id: str
    client_email: str
    public_key: RSAKey


@attrs.define
class FcmServer:
    """Token and send endpoints sharing the accounts they trust and the tokens they issued."""

    clock: Clock = attrs.Factory(SystemClock)
    host: str = "127.0.0.1"
    port: int = 0
    expires_in: int = 3600
    # Seconds each send waits before answering: keeps requests in flight.
    delay: float = 0.0
    # False refuses every access token (a disabled service account).
    accept_tokens: bool = True
    accounts: dict[str, _Account] = attrs.Factory(dict)  # by private_key_id
    tokens: dict[str, tuple[str, datetime]] = attrs.Factory(dict)  # token -> (project, expiry)
    received: list[Received] = attrs.Factory(list)
    token_requests: int = 0
    send_requests: int = 0
    unauthorized: int = 0  # sends refused with 401 for their bearer token
    in_flight: int = 0
    max_in_flight: int = 0
    injected: dict[str, deque[Injected]] = attrs.Factory(lambda: defaultdict(deque))
    token_failures: deque[tuple[int, dict[str, Any]]] = attrs.Factory(deque)
    lock: threading.Lock = attrs.Factory(threading.Lock)

    @property
    def base_url(self) -> str:
        """The bare base URL (PUSHCORE_FCM_URL) of the send endpoint."""
        return f"https://{self.host}:{self.port}"

    @property
    def token_uri(self) -> str:
        """The OAuth token endpoint's URL."""
        return f"{self.base_url}{TOKEN_PATH}"

    def trust(self, account: Mapping[str, str]) -> None:
        """Accept assertions signed with this service account's key."""
        public = RSAKey.import_key(account["private_key"]).as_pem(private=False)
        with self.lock:
            self.accounts[account["private_key_id"]] = _Account(
                account["project_id"], account["client_email"], RSAKey.import_key(public)
            )

    def service_account(
        self, project_id: str = "pushcore-test", key: RSAKey | None = None
    ) -> dict[str, str]:
        """A new service account whose token_uri is this server, trusted by it."""
        account = make_service_account(self.token_uri, project_id, key=key)
        self.trust(account)
        return account

    def inject(self, device_token: str, answer: Injected, times: int = 1) -> None:
        """Answer the next ``times`` sends to ``device_token`` with ``answer``."""
        with self.lock:
            self.injected[device_token].extend([answer] * times)

    def fail_token_requests(self, status: int, body: dict[str, Any], times: int = 1) -> None:
        """Answer the next ``times`` token requests with ``status`` and ``body``."""
        with self.lock:
            self.token_failures.extend([(status, body)] * times)

    def revoke_tokens(self) -> None:
        """Refuse every access token issued so far (as after a key rotation)."""
        with self.lock:
            self.tokens.clear()

    def messages(self) -> list[dict[str, Any]]:
        """The messages the send endpoint accepted, in order."""
        with self.lock:
            return [r.message for r in self.received if r.status == 200]

    # The endpoints. Each returns (status, JSON body, extra headers).

    def _token(
        self, content_type: str, form: Mapping[str, list[str]]
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        with self.lock:
            self.token_requests += 1
            if self.token_failures:
                status, body = self.token_failures.popleft()
                return status, body, {}
        if not content_type.startswith("application/x-www-form-urlencoded"):
            return 400, {"error": "invalid_request", "error_description": "Bad content type"}, {}
        if form.get("grant_type") != [JWT_BEARER_GRANT]:
            return (
                400,
                {"error": "unsupported_grant_type", "error_description": "Invalid grant_type"},
                {},
            )
        try:
            account, problem = self._check_assertion(form.get("assertion", [""])[0])
        except (JoseError, ValueError, KeyError, TypeError) as exc:
            account, problem = None, f"Invalid JWT Signature. ({exc})"
        if account is None or problem is not None:
            return 400, {"error": "invalid_grant", "error_description": problem}, {}
        token = f"ya29.fake-{secrets.token_urlsafe(24)}"
        with self.lock:
            expiry = self.clock.now() + timedelta(seconds=self.expires_in)
            self.tokens[token] = (account.project_id, expiry)
        return (
            200,
            {"access_token": token, "expires_in": self.expires_in, "token_type": "Bearer"},
            {},
        )

    def _check_assertion(self, assertion: str) -> tuple[_Account | None, str | None]:
        header = jws.extract_compact(assertion.encode()).headers()
        if header.get("alg") != "RS256":
            return None, "Invalid JWT: alg must be RS256"
        with self.lock:
            account = self.accounts.get(str(header.get("kid")))
        if account is None:
            return None, "Invalid JWT Signature. (unknown kid)"
        claims = jwt.decode(assertion, account.public_key, algorithms=["RS256"]).claims
        now = self.clock.now().timestamp()
        iat, exp = claims.get("iat"), claims.get("exp")
        if claims.get("iss") != account.client_email:
            return account, "Invalid JWT: iss is not the service account's client_email"
        if FCM_SCOPE not in str(claims.get("scope", "")).split():
            return account, "Invalid OAuth scope or ID token audience provided."
        if claims.get("aud") != self.token_uri:
            return account, "Invalid JWT: aud must be the token_uri"
        if not isinstance(iat, int) or not isinstance(exp, int):
            return account, "Invalid JWT: iat and exp must be integers"
        if iat > now + 60 or exp <= now or exp - iat > 3600:
            return account, (
                "Invalid JWT: Token must be a short-lived token (60 minutes) and in a"
                " reasonable timeframe. Check your iat and exp values in the JWT claim."
            )
        return account, None

    def _send(
        self, path: str, authorization: str, body: Any
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        with self.lock:
            self.send_requests += 1
            scheme, _, token = authorization.partition(" ")
            issued = self.tokens.get(token) if scheme == "Bearer" else None
            if not self.accept_tokens or issued is None or issued[1] <= self.clock.now():
                self.unauthorized += 1
                message = "Request had invalid authentication credentials."
                headers = {"WWW-Authenticate": 'Bearer realm="https://accounts.google.com/"'}
                return 401, fcm_error_body(401, "UNAUTHENTICATED", message), headers
        if path != f"/v1/projects/{issued[0]}/messages:send":
            return 404, fcm_error_body(404, "NOT_FOUND", "Requested entity was not found."), {}
        problem = _schema_problem(body)
        if problem is not None:
            return 400, fcm_error_body(400, "INVALID_ARGUMENT", problem, "INVALID_ARGUMENT"), {}
        message = body["message"]
        with self.lock:
            queue = self.injected.get(message["token"])
            answer = queue.popleft() if queue else None
            status = answer.status if answer else 200
            self.received.append(Received(message, token, status))
            count = len(self.received)
        if answer is not None:
            extra = {"Retry-After": answer.retry_after} if answer.retry_after else {}
            return answer.status, answer.body, extra
        return 200, {"name": f"projects/{issued[0]}/messages/{count}"}, {}


def _schema_problem(body: Any) -> str | None:
    """What FCM would say about this request body, or None when it is a valid message."""
    if not isinstance(body, dict) or set(body) - {"message", "validate_only"}:
        return "Invalid JSON payload received. Unknown name at the top level."
    message = body.get("message")
    if not isinstance(message, dict):
        return "Invalid JSON payload received. 'message' must be an object."
    unknown = set(message) - MESSAGE_FIELDS
    if unknown:
        return f"Invalid JSON payload received. Unknown name \"{sorted(unknown)[0]}\" at 'message'"
    if not isinstance(message.get("token"), str) or not message["token"]:
        return "The registration token is not a valid FCM registration token"
    data = message.get("data", {})
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        return "Invalid value at 'message.data': every value must be a string"
    for key in data:
        if key in RESERVED_DATA_KEYS or key.startswith(("google", "gcm")):
            return f"Invalid data payload key: {key}"
    if sum(len(k.encode()) + len(v.encode()) for k, v in data.items()) > MAX_DATA_BYTES:
        return "Android message is too big"
    android = message.get("android", {})
    if not isinstance(android, dict) or set(android) - ANDROID_FIELDS:
        return "Invalid JSON payload received. Unknown name at 'message.android'"
    if android.get("priority", "NORMAL") not in ("HIGH", "NORMAL"):
        return "Invalid value at 'message.android.priority'"
    return None


def _handler(server: FcmServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Without it, Nagle's algorithm and the client's delayed ACK hold each
        # answer's second write for up to 40 ms.
        disable_nagle_algorithm = True

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length", "0")))
            if self.path == TOKEN_PATH:
                content_type = self.headers.get("content-type", "")
                status, body, extra = server._token(content_type, parse_qs(raw.decode()))
            else:
                with server.lock:
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    if server.delay:
                        time.sleep(server.delay)
                    try:
                        payload = json.loads(raw)
                    except ValueError:
                        payload = None
                    status, body, extra = server._send(
                        self.path, self.headers.get("authorization", ""), payload
                    )
                finally:
                    with server.lock:
                        server.in_flight -= 1
            encoded = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(encoded)))
            for name, value in extra.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(encoded)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: tests read the records instead."""

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # many connections at once: the default 5 resets them

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients hanging up (a closed gateway, a timeout) are expected here."""


@contextmanager
def running_fcm_server(cert: ssl.SSLContext, clock: Clock | None = None) -> Iterator[FcmServer]:
    """An FCM fake on a free loopback port; ``cert`` is a server-side context with a
    certificate for 127.0.0.1."""
    fake = FcmServer(clock=clock or SystemClock())
    server = _Server((fake.host, 0), _handler(fake))
    fake.port = server.server_address[1]
    # The handshake happens in the connection's own thread, not in the accept loop.
    server.socket = cert.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    # A short poll interval makes shutdown() quick (the default waits up to 0.5 s).
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
