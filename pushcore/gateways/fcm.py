"""Firebase Cloud Messaging (HTTP v1): data-only messages to Android devices.

Authentication is OAuth2's JWT-bearer grant (RFC 7523) with the service
account's key: an RS256 assertion is exchanged at the account's ``token_uri``
for an access token, which is cached and refreshed five minutes before it
expires. One refresh runs at a time; a 401 from the send endpoint (a token
revoked early) triggers one refresh and one retry.

What a message holds and what FCM's answers mean: gateways/fcm_message.py.
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import attrs
import httpx
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import RSAKey

from pushcore.config import Settings
from pushcore.domain.outcomes import Delivered, Dispatch, Failed, Outcome, Retry
from pushcore.domain.withdraw import is_withdrawal
from pushcore.gateways._answer import retry_after_seconds
from pushcore.gateways._http import status_reason
from pushcore.gateways.after_sending import body_key, fcm_ttl, fcm_withdrawal
from pushcore.gateways.fcm_message import FcmAnswer, fcm_message, fitted_data, outcome_of
from pushcore.gateways.quiet import quiet_fcm_message
from pushcore.outbound.guard import tls_context
from pushcore.ports import Clock

log = logging.getLogger("pushcore.delivery")

USER_AGENT = "pushcore-fcm/1"
FCM_SCOPE = "https://www.googleapis.com/auth/firebase.messaging"
JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
# Google accepts assertions valid for at most an hour.
ASSERTION_LIFETIME = 3600
# Refresh this long before the access token expires, so a request never
# carries a token that dies on the way.
REFRESH_MARGIN = 300
REQUIRED_FIELDS = ("project_id", "private_key_id", "private_key", "client_email", "token_uri")


@attrs.frozen
class ServiceAccount:
    """The parts of a Google service-account key file that FCM needs."""

    project_id: str
    client_email: str
    private_key_id: str
    token_uri: str
    key: RSAKey = attrs.field(repr=False)

    @classmethod
    def parse(cls, data: Mapping[str, Any]) -> ServiceAccount:
        """Read a key file's JSON object; ValueError naming what is wrong."""
        kind = data.get("type", "service_account")
        if kind != "service_account":
            raise ValueError(f"not a service account key file (its type is {kind!r})")
        for field in REQUIRED_FIELDS:
            value = data.get(field)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"the service account has no {field!r}")
        token_uri = data["token_uri"]
        parts = urlsplit(token_uri)
        # The assertion is a bearer credential for an hour: never send it in clear.
        if parts.scheme != "https" or not parts.hostname:
            raise ValueError(f"token_uri must be an https URL, not {token_uri!r}")
        try:
            key = RSAKey.import_key(data["private_key"])
        except (JoseError, ValueError, TypeError):
            raise ValueError("private_key is not a PEM RSA private key") from None
        if not key.is_private:
            raise ValueError("private_key is a public key; the private key is needed")
        return cls(data["project_id"], data["client_email"], data["private_key_id"], token_uri, key)

    def assertion(self, now: datetime) -> str:
        """A signed RS256 JWT asking ``token_uri`` for an FCM access token."""
        issued = int(now.timestamp())
        header = {"alg": "RS256", "typ": "JWT", "kid": self.private_key_id}
        claims = {
            "iss": self.client_email,
            "scope": FCM_SCOPE,
            "aud": self.token_uri,
            "iat": issued,
            "exp": issued + ASSERTION_LIFETIME,
        }
        return jwt.encode(header, claims, self.key, algorithms=["RS256"])


def bare_base_url(url: str) -> str:
    """``url`` without a trailing slash; ValueError unless it is a bare https base URL."""
    parts = urlsplit(url)
    # Every request carries the access token: never in clear.
    if parts.scheme != "https" or not parts.hostname:
        raise ValueError(f"must be an https URL, not {url!r}")
    base = url.rstrip("/")
    if base.endswith("/v1"):
        raise ValueError(f"must be a bare base URL without /v1 (e.g. {base[:-3]!r})")
    return base


async def _already(outcome: Outcome) -> Outcome:
    return outcome


@attrs.frozen
class _AccessToken:
    value: str
    refresh_at: datetime


class _NoToken(Exception):
    """No access token could be had; ``outcome`` is what each waiting delivery gets."""

    def __init__(self, outcome: Retry | Failed) -> None:
        super().__init__(outcome.reason)
        self.outcome = outcome


class FcmGateway:
    """Sends data-only FCM v1 messages over one HTTP/2 client (made on first use)."""

    def __init__(
        self,
        *,
        service_account: Mapping[str, Any],
        base_url: str,
        clock: Clock,
        tls: ssl.SSLContext | None = None,
        concurrency: int = 64,
        timeout: float = 10.0,
        connect_timeout: float = 5.0,
    ) -> None:
        self._account = ServiceAccount.parse(service_account)
        self._send_url = (
            f"{bare_base_url(base_url)}/v1/projects/{self._account.project_id}/messages:send"
        )
        self._clock = clock
        self._tls = tls
        self._concurrency = concurrency
        self._timeout = httpx.Timeout(timeout, connect=connect_timeout)
        # Requests wait for a slot here rather than in httpx's pool, whose wait
        # would count against the request's own timeout.
        self._slots = asyncio.Semaphore(concurrency)
        self._token_lock = asyncio.Lock()
        self._token: _AccessToken | None = None
        # A failed token request is remembered for the rest of its batch, so a
        # dead token endpoint costs one request per batch, not one per delivery.
        self._token_failure: Retry | Failed | None = None
        self._http: httpx.AsyncClient | None = None

    @classmethod
    def from_settings(cls, settings: Settings, clock: Clock) -> FcmGateway:
        """A gateway from PUSHCORE_FCM_SERVICE_ACCOUNT_FILE, _FCM_URL and _CA_FILE."""
        try:
            base_url = bare_base_url(settings.fcm_url)
        except ValueError as exc:
            raise ValueError(f"PUSHCORE_FCM_URL: {exc}") from None
        path = settings.fcm_service_account_file
        where = f"PUSHCORE_FCM_SERVICE_ACCOUNT_FILE: {path}"
        if path is None:
            raise ValueError("PUSHCORE_FCM_SERVICE_ACCOUNT_FILE: not set")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ValueError(f"{where}: cannot read it: {exc.strerror}") from None
        except ValueError:
            raise ValueError(f"{where}: not a JSON key file") from None
        if not isinstance(data, dict):
            raise ValueError(f"{where}: not a JSON object")
        try:
            return cls(
                service_account=data,
                base_url=base_url,
                clock=clock,
                tls=tls_context(settings.ca_file),
            )
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None

    def check(self) -> str:
        """Sign (and verify) an assertion with the key; a line describing the set-up."""
        account = self._account
        try:
            assertion = account.assertion(self._clock.now())
            jwt.decode(assertion, account.key, algorithms=["RS256"])
        except (JoseError, ValueError, TypeError) as exc:
            raise ValueError(f"cannot sign with the service account's private key: {exc}") from None
        return (
            f"FCM project {account.project_id} as {account.client_email}"
            f" (key {account.private_key_id}); tokens from {account.token_uri};"
            f" sending to {self._send_url}"
        )

    def _client(self) -> httpx.AsyncClient:
        # A client belongs to the loop it was made in: make it inside the engine's.
        if self._http is None:
            # One more connection than slots: the token request never waits for one.
            size = self._concurrency + 1
            self._http = httpx.AsyncClient(
                http2=True,
                verify=self._tls if self._tls is not None else True,
                limits=httpx.Limits(max_connections=size, max_keepalive_connections=size),
                timeout=self._timeout,
                headers={"User-Agent": USER_AGENT},
                # Settings come from PUSHCORE_* only, not proxies from the environment.
                trust_env=False,
            )
        return self._http

    async def send(self, dispatches: Sequence[Dispatch]) -> Sequence[Outcome]:
        """Send every dispatch concurrently (bounded); one outcome each, in order."""
        if not dispatches:
            return []
        self._token_failure = None
        try:
            # Fetched once up front: a failure answers the whole batch at once.
            await self._access_token()
        except _NoToken as exc:
            return [exc.outcome] * len(dispatches)
        # A fan-out batch is one notification to many devices: build its data once.
        data: dict[tuple[tuple[str, str], int], dict[str, str] | Failed] = {}
        sends = []
        now = self._clock.now()
        for dispatch in dispatches:
            notification, receipt = dispatch.notification, dispatch.receipt
            withdrawal = is_withdrawal(dispatch.delivery)
            # Fitted with room for a receipt of this length; each device gets its own.
            room = None if receipt is None or withdrawal else "x" * len(receipt)
            key = (body_key(dispatch), 0 if room is None else len(room))
            if key not in data:
                data[key] = (
                    fcm_withdrawal(notification) if withdrawal else fitted_data(notification, room)
                )
            fitted = data[key]
            if isinstance(fitted, Failed):
                sends.append(_already(fitted))
                continue
            if receipt is not None and not withdrawal:
                fitted = {**fitted, "receipt": receipt}
            ttl = fcm_ttl(notification, now)
            message = fcm_message(dispatch.device.token, fitted, notification.priority, ttl)
            if dispatch.quiet:
                message = quiet_fcm_message(message)
            body = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()
            sends.append(self._send_one(body, notification.id))
        return await asyncio.gather(*sends)

    async def _send_one(self, body: bytes, notification_id: str) -> Outcome:
        async with self._slots:
            try:
                access = await self._access_token()
                outcome = await self._post(body, access, notification_id)
                if outcome is None:
                    # Refused before its expiry (revoked, or keys rotated): renew once.
                    access = await self._access_token(rejected=access)
                    outcome = await self._post(body, access, notification_id)
            except _NoToken as exc:
                return exc.outcome
        if outcome is None:
            log.error("FCM refused a fresh access token; check the service account's roles")
            return Failed("UNAUTHENTICATED")
        return outcome

    async def _post(self, body: bytes, access: str, notification_id: str) -> Outcome | None:
        headers = {
            "Authorization": f"Bearer {access}",
            "Content-Type": "application/json; charset=utf-8",
        }
        try:
            response = await self._client().post(self._send_url, content=body, headers=headers)
        except httpx.TimeoutException:
            return Retry("FCM timed out")
        except httpx.HTTPError:
            return Retry("FCM unreachable")
        if response.status_code == 200:
            return Delivered()
        answer = FcmAnswer.parse(response.content)
        retry_after = retry_after_seconds(response.headers.get("Retry-After"), self._clock.now())
        outcome = outcome_of(response.status_code, answer, retry_after)
        if isinstance(outcome, Failed):
            # The reason kept is FCM's code; its message is what an operator needs.
            log.warning(
                "FCM refused notification %s: %s %s",
                notification_id,
                outcome.reason,
                answer.message,
            )
        return outcome

    def _fresh(self, rejected: str | None) -> str | None:
        token = self._token
        if token is None or token.value == rejected or self._clock.now() >= token.refresh_at:
            return None
        return token.value

    async def _access_token(self, rejected: str | None = None) -> str:
        """A cached access token that is not ``rejected``; _NoToken when none can be had."""
        value = self._fresh(rejected)
        if value is not None:
            return value
        async with self._token_lock:
            # Another delivery may have renewed it (or failed to) while this one waited.
            value = self._fresh(rejected)
            if value is not None:
                return value
            if self._token_failure is not None:
                raise _NoToken(self._token_failure)
            try:
                self._token = await self._fetch_token()
            except _NoToken as exc:
                self._token_failure = exc.outcome
                raise
            return self._token.value

    async def _fetch_token(self) -> _AccessToken:
        now = self._clock.now()
        form = {"grant_type": JWT_BEARER_GRANT, "assertion": self._account.assertion(now)}
        try:
            response = await self._client().post(self._account.token_uri, data=form)
        except httpx.TimeoutException:
            raise _NoToken(Retry("FCM token endpoint timed out")) from None
        except httpx.HTTPError:
            raise _NoToken(Retry("FCM token endpoint unreachable")) from None
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            answer = {}
        if response.status_code != 200:
            raise _NoToken(self._token_refusal(response, answer))
        value = answer.get("access_token")
        lifetime = answer.get("expires_in", ASSERTION_LIFETIME)
        if not isinstance(value, str) or not value or not isinstance(lifetime, int | float):
            raise _NoToken(Retry("FCM token endpoint gave no access token"))
        # Short-lived tokens are renewed at half their life instead.
        ahead = min(REFRESH_MARGIN, lifetime / 2)
        return _AccessToken(value, now + timedelta(seconds=lifetime - ahead))

    def _token_refusal(self, response: httpx.Response, answer: Mapping[str, Any]) -> Retry | Failed:
        status = response.status_code
        if status == 429 or status >= 500:
            after = retry_after_seconds(response.headers.get("Retry-After"), self._clock.now())
            return Retry(f"FCM token endpoint: {status_reason(status)}", after)
        # invalid_grant and friends: a wrong, deleted or disabled key, which
        # retrying will not mend; the description says which.
        error = answer.get("error") or status_reason(status)
        description = answer.get("error_description")
        reason = f"FCM auth refused: {error}" + (f" ({description})" if description else "")
        log.error("%s; check PUSHCORE_FCM_SERVICE_ACCOUNT_FILE", reason)
        return Failed(reason)

    async def aclose(self) -> None:
        """Close the HTTP client."""
        if self._http is not None:
            await self._http.aclose()
            self._http = None
