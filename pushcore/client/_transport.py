"""Sending calls over httpx: credentials, Idempotency-Key, retries and error answers.

The decisions (which header, whether and how long to wait before another
attempt, what an answer means) live in :class:`Policy`; the sync and async
senders only run the loop with their own httpx client and sleep.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import Callable, Generator, Mapping
from typing import Any, TypeVar

import attrs
import httpx

from pushcore.client._call import Auth, Call
from pushcore.client._errors import error_for, retry_after
from pushcore.client._session import Session
from pushcore.domain.errors import ConnectionFailed, PushcoreError, ServerError, Unauthorized

T = TypeVar("T")
# What a sender hands back to Policy.attempts: None after a sleep (and to start).
Answer = httpx.Response | httpx.TransportError | None
Steps = Generator[httpx.Request | float, Answer, T]

# Failures where the request certainly or probably never reached the service,
# so another attempt is safe (a POST carries its Idempotency-Key anyway).
# A read timeout is not among them: the server may still be working on it.
RETRYABLE_ERRORS = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.PoolTimeout,
    httpx.ReadError,
    httpx.WriteError,
    httpx.RemoteProtocolError,
)
RETRYABLE_STATUS = frozenset({429, 503})
# A Retry-After longer than this is not waited for inside a call: the error is raised.
MAX_RETRY_AFTER = 60.0
# A stream's reads wait past the live channel's keep-alive (15 s).
STREAM_TIMEOUT = httpx.Timeout(10.0, read=45.0)


@attrs.frozen
class Policy:
    """How a client authenticates and retries; shared by the sync and async senders."""

    api_key: str | None = None
    token: str | None = None
    # A signed-in client's tokens (Client.login): its access token is the token.
    session: Session | None = None
    retries: int = 3
    backoff: float = 0.5  # seconds before the first retry, doubled on each next one
    max_backoff: float = 8.0
    # Jitter spreads out the retries of clients that failed together; a test can pin it.
    jitter: Callable[[], float] = random.random

    def bearer(self) -> str | None:
        """The token sent as Bearer: the session's access token, or the one given."""
        return self.session.tokens.access_token if self.session is not None else self.token

    def sends_token(self, call: Call[Any]) -> bool:
        """Whether ``call`` carries the token (not the key, not nothing)."""
        if call.auth is Auth.NONE or self.bearer() is None:
            return False
        return call.auth is Auth.USER or not self.api_key

    def renews(self, call: Call[Any]) -> Session | None:
        """The session to renew for ``call`` when its access token is the credential."""
        return self.session if self.session is not None and self.sends_token(call) else None

    def headers(self, call: Call[Any]) -> dict[str, str]:
        """The credential the endpoint takes, or the one the client has; an Idempotency-Key."""
        headers: dict[str, str] = {}
        if call.auth is not Auth.NONE:
            token = self.bearer()
            key = {"X-API-Key": self.api_key} if self.api_key else None
            user = {"Authorization": f"Bearer {token}"} if token else None
            # Without the credential an endpoint takes, send the other one so the
            # server's 401 says which is needed.
            first, second = (user, key) if call.auth is Auth.USER else (key, user)
            headers.update(first or second or {})
        if call.method == "POST":
            # One key per logical call, the same on every attempt of it.
            headers["Idempotency-Key"] = str(uuid.uuid4())
        headers.update(call.headers or {})
        return headers

    def request(self, http: httpx.Client | httpx.AsyncClient, call: Call[Any]) -> httpx.Request:
        """The httpx request of ``call``."""
        return http.build_request(
            call.method, call.path, json=call.json, params=call.params, headers=self.headers(call)
        )

    def streaming(
        self, http: httpx.Client | httpx.AsyncClient, call: Call[Any], headers: Mapping[str, str]
    ) -> httpx.Request:
        """The request of a call whose answer is a stream: ``headers`` added, long reads."""
        request = self.request(http, call)
        request.headers.update(headers)
        request.extensions["timeout"] = STREAM_TIMEOUT.as_dict()
        return request

    def wait(self, attempt: int, response: httpx.Response | None) -> float | None:
        """Seconds to wait before another attempt after ``attempt`` (0-based), None to stop."""
        if attempt >= self.retries:
            return None
        if response is not None:
            if response.status_code not in RETRYABLE_STATUS:
                return None
            asked = retry_after(response)
            if asked is not None:
                return None if asked > MAX_RETRY_AFTER else asked + self.backoff * self.jitter()
        # Exponential backoff with "equal jitter": half fixed, half random.
        ceiling = min(self.max_backoff, self.backoff * 2.0**attempt)
        return ceiling / 2 * (1 + self.jitter())

    def outcome(self, call: Call[T], response: httpx.Response) -> T:
        """The parsed result of a 2xx answer; the error tree's exception otherwise."""
        if not response.is_success:
            raise error_for(response)
        try:
            return call.parse(response.json())
        except Exception as exc:
            error = ServerError(f"Unexpected answer to {call.method} {call.path}: {exc}")
            error.status = response.status_code
            raise error from exc

    def failed(self, request: httpx.Request, exc: httpx.TransportError) -> PushcoreError:
        """The ConnectionFailed an httpx transport error becomes, naming the URL."""
        reason = str(exc) or type(exc).__name__
        return ConnectionFailed(f"No answer from {request.method} {request.url}: {reason}")

    def attempts(self, call: Call[T], http: httpx.Client | httpx.AsyncClient) -> Steps[T]:
        """The retry loop without I/O: yields a request to send or seconds to sleep.

        The sender sends each answer (an httpx response or transport error)
        back in; the generator returns the result or raises.
        """
        request = self.request(http, call)
        attempt = 0
        while True:
            answer = yield request
            if isinstance(answer, httpx.Response):
                delay = self.wait(attempt, answer)
                if delay is None:
                    return self.outcome(call, answer)
            else:
                assert answer is not None
                delay = self.wait(attempt, None) if isinstance(answer, RETRYABLE_ERRORS) else None
                if delay is None:
                    raise self.failed(request, answer) from answer
            yield delay
            attempt += 1


class Sender:
    """Runs calls with an httpx.Client, retrying as the policy says."""

    def __init__(self, http: httpx.Client, policy: Policy) -> None:
        self.http = http
        self.policy = policy

    def open(self, call: Call[Any], headers: Mapping[str, str]) -> httpx.Response:
        """``call`` sent once with ``headers`` added, its answer streamed (close it)."""
        return self.http.send(self.policy.streaming(self.http, call, headers), stream=True)

    def send(self, call: Call[T]) -> T:
        """The parsed answer, or the error tree's exception; a session renewed as needed."""
        session = self.policy.renews(call)
        if session is None:
            return self.attempt(call)
        if session.due():
            self.renew(session, session.tokens.refresh_token)
        spent = session.tokens.refresh_token
        try:
            return self.attempt(call)
        except Unauthorized:
            # Expired early or signed with a key the server no longer has: renew once.
            self.renew(session, spent)
            return self.attempt(call)

    def renew(self, session: Session, spent: str) -> None:
        """Spend ``spent`` for a new pair, unless another thread already did."""
        with session.exclusive():
            renewal = session.renewal(spent)
            if renewal is not None:
                session.renewed(self.attempt(renewal))

    def attempt(self, call: Call[T]) -> T:
        """The answer of ``call``, retried as the policy says."""
        steps = self.policy.attempts(call, self.http)
        answer: Answer = None
        try:
            while True:
                step = steps.send(answer)
                if isinstance(step, float):
                    time.sleep(step)
                    answer = None
                    continue
                try:
                    answer = self.http.send(step)
                except httpx.TransportError as exc:
                    answer = exc
        except StopIteration as done:
            result: T = done.value
            return result


class AsyncSender:
    """Runs calls with an httpx.AsyncClient, retrying as the policy says."""

    def __init__(self, http: httpx.AsyncClient, policy: Policy) -> None:
        self.http = http
        self.policy = policy
        self.renewing = asyncio.Lock()

    async def open(self, call: Call[Any], headers: Mapping[str, str]) -> httpx.Response:
        """``call`` sent once with ``headers`` added, its answer streamed (close it)."""
        request = self.policy.streaming(self.http, call, headers)
        return await self.http.send(request, stream=True)

    async def send(self, call: Call[T]) -> T:
        """The parsed answer, or the error tree's exception; a session renewed as needed."""
        session = self.policy.renews(call)
        if session is None:
            return await self.attempt(call)
        if session.due():
            await self.renew(session, session.tokens.refresh_token)
        spent = session.tokens.refresh_token
        try:
            return await self.attempt(call)
        except Unauthorized:
            await self.renew(session, spent)
            return await self.attempt(call)

    async def renew(self, session: Session, spent: str) -> None:
        """Spend ``spent`` for a new pair, unless another task already did."""
        async with self.renewing:
            renewal = session.renewal(spent)
            if renewal is not None:
                session.renewed(await self.attempt(renewal))

    async def attempt(self, call: Call[T]) -> T:
        """The answer of ``call``, retried as the policy says."""
        steps = self.policy.attempts(call, self.http)
        answer: Answer = None
        try:
            while True:
                step = steps.send(answer)
                if isinstance(step, float):
                    await asyncio.sleep(step)
                    answer = None
                    continue
                try:
                    answer = await self.http.send(step)
                except httpx.TransportError as exc:
                    answer = exc
        except StopIteration as done:
            result: T = done.value
            return result
