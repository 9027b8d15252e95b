"""Idempotency-Key on every POST under /api/: one mechanism, in two places.

:class:`IdempotentPosts` (a pure ASGI middleware) marks each POST under
``/api/`` and watches its answer; :func:`claim_key`, called by
:func:`pushcore_http.auth.authenticate` once the caller's account is known,
claims the key (or answers with the kept answer, a 409 or a 422). When the
request ends, its answer is kept for replay, unless it is one a retry should
not get again: a 5xx, a 429, or no complete answer (the client went away, the
handler failed). Then the claim is released and a retry acts afresh.
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
NOT_KEPT = "/api/auth/"
"""The POSTs whose answers are never kept: sign-in and sessions (pushcore_http/routes/people.py)."""


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


async def claim_key(request: Request, services: Services, caller: Principal) -> None:
    """Claim the request's Idempotency-Key for the caller's account, if it sends one.

    400 for a malformed key; Replayed, IdempotencyKeyReused (422) or
    IdempotencyKeyInUse (409) when the key is held. Reads the body (up to the
    largest limit of any endpoint; the route applies its own) to hash it.
    """
    pending = request.scope.get(_PENDING)
    key = request.headers.get(HEADER)
    if not isinstance(pending, _Pending) or key is None or pending.claim is not None:
        return
    check_key(key)
    raw = await read_body(request, MAX_BATCH_BODY_BYTES)
    # Starlette's own cache of the body: the route's read_json gets these bytes.
    request._body = raw
    digest = request_hash(request.method, request.url.path, raw)
    outcome = await run_in_threadpool(services.idempotency.claim, caller.account_id, key, digest)
    if isinstance(outcome, Replay):
        raise Replayed(outcome)
    pending.claim = outcome


class IdempotentPosts:
    """Keeps or releases the claim :func:`claim_key` made, once the answer is known."""

    def __init__(self, app: ASGIApp, services: Services) -> None:
        self.app = app
        self._services = services

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] != "POST"
            or not scope["path"].startswith("/api/")
            # Sessions and passwords: nothing there to replay, nothing to keep a hash of.
            or scope["path"].startswith(NOT_KEPT)
        ):
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
