"""Idempotency-Key on every POST with an account: one mechanism, in two places.

:func:`claim_key`, called by the route layer (:mod:`pushcore_http.layers`)
once the caller's account is known, claims the key (or answers with the kept
answer, a 409 or a 422). :class:`IdempotentPosts`, a pure ASGI middleware
outside the error handlers, watches the answer that is sent, error answers
included: when the request ends, the answer is kept for replay, unless it is
one a retry should not get again: a 5xx, a 429, or no complete answer (the
client went away, the handler failed). Then the claim is released and a retry
acts afresh. Which POSTs are keyed is the route's declaration
(:func:`pushcore_http.auth.authenticated`), not a path.
"""

from __future__ import annotations

import logging

import anyio
import attrs
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pushcore.domain.errors import Unavailable
from pushcore.domain.idempotency import HEADER, check_key, request_hash
from pushcore.services import Claim, Principal, Replay, Services
from pushcore_http.body import MAX_BATCH_BODY_BYTES, read_body

log = logging.getLogger("pushcore.http")

REPLAYED_HEADER = "Idempotent-Replayed"
_PENDING = "pushcore.idempotency"
_HEADER_NAME = HEADER.lower().encode("latin-1")  # as ASGI gives header names


def _keyed(scope: Scope) -> bool:
    """Whether the request sends an Idempotency-Key (:func:`claim_key` claims only then)."""
    return any(name == _HEADER_NAME for name, _ in scope["headers"])


@attrs.define
class _Pending:
    """What the middleware and :func:`claim_key` share about one POST."""

    claim: Claim | None = None


class Replayed(Exception):
    """Raised by :func:`claim_key` to answer with a kept answer instead of the route's."""

    def __init__(self, replay: Replay) -> None:
        super().__init__("replayed")
        self.replay = replay


async def replayed(_request: Request, exc: Exception) -> Response:
    """The kept answer, as it was first sent, marked as a replay."""
    assert isinstance(exc, Replayed)
    return Response(
        exc.replay.body,
        exc.replay.status,
        headers={REPLAYED_HEADER: "true"},
        media_type="application/json",
    )


async def claim_key(request: Request, services: Services, caller: Principal) -> Receive:
    """Claim the request's Idempotency-Key for the caller's account, if it sends one.

    400 for a malformed key; Replayed, IdempotencyKeyReused (422) or
    IdempotencyKeyInUse (409) when the key is held. Reads the body (up to the
    largest limit of any endpoint; the route applies its own) to hash it, and
    returns the ``receive`` the route reads the body from: the same bytes again.
    """
    key = request.headers.get(HEADER)
    if key is None:
        return request.receive
    pending = request.scope.get(_PENDING)
    if not isinstance(pending, _Pending):
        # Without the middleware a claim would never be settled: a bug, not a request's fault.
        raise RuntimeError("Idempotency-Key claimed outside the IdempotentPosts middleware")
    check_key(key)
    raw = await read_body(request, MAX_BATCH_BODY_BYTES)
    digest = request_hash(request.method, request.url.path, raw)
    outcome = await run_in_threadpool(services.idempotency.claim, caller.account_id, key, digest)
    if isinstance(outcome, Replay):
        raise Replayed(outcome)
    pending.claim = outcome
    return _replaying(raw, request.receive)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` (already read) first, then what ``receive`` gives."""
    given = False

    async def replay() -> Message:
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


class IdempotentPosts:
    """Keeps or releases the claim :func:`claim_key` made, once the answer is known."""

    def __init__(self, app: ASGIApp, services: Services) -> None:
        self.app = app
        self._services = services

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or not _keyed(scope):
            # Nothing to claim, so nothing to settle: no watch on the answer (most POSTs).
            await self.app(scope, receive, send)
            return
        pending = scope[_PENDING] = _Pending()
        status = 0
        chunks: list[bytes] = []
        answered = False

        async def watch(message: Message) -> None:
            nonlocal status, answered
            if pending.claim is not None:
                if message["type"] == "http.response.start":
                    status = message["status"]
                elif message["type"] == "http.response.body":
                    chunks.append(message.get("body", b""))
                    answered = not message.get("more_body", False)
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            if pending.claim is not None:
                keep = answered and status < 500 and status != 429
                # Shielded: a request cancelled because its client left must still
                # give its key up (or keep its answer, when it had one).
                with anyio.CancelScope(shield=True):
                    await self._settle(pending.claim, status if keep else None, chunks)

    async def _settle(self, claim: Claim, status: int | None, chunks: list[bytes]) -> None:
        services = self._services.idempotency
        try:
            if status is None:
                await run_in_threadpool(services.release, claim)
            else:
                await run_in_threadpool(services.complete, claim, status, b"".join(chunks))
        except Unavailable as exc:
            # The database went away meanwhile: the claim lapses after ABANDONED_AFTER.
            log.warning("could not settle Idempotency-Key %r: %s", claim.key, exc.message)
        except Exception:  # the answer is out; a lost record only makes a retry act again
            log.exception("could not settle Idempotency-Key %r", claim.key)
