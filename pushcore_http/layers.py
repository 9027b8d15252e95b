"""The layer in front of every endpoint that takes a credential.

:func:`pushcore_http.endpoints.route_table` puts each such endpoint behind
:class:`Authenticated`, which does, as the endpoint's declaration says, in this
order (which tests/http pins: a bad credential's 401 before the 429, the 429
before a missing scope's 401, all three before the body is read):

1. authentication: the caller, resolved once per request from the declared
   kind of credential (401 otherwise);
2. the rate limit of the caller's account (429);
3. the scope an API key needs (401);
4. for a POST, the Idempotency-Key claim (:func:`claim_key`; 400, 409, 422 or
   the kept answer), unless declared otherwise;

then the endpoint runs, with the caller in the request (:func:`caller_of`).
A public endpoint (``PUBLIC``) gets none of them. The declaration is also what
the OpenAPI document's security comes from, so no route can forget its
credential, its rate limit or its Idempotency-Key, nor say another one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from pushcore.services import Services
from pushcore_http.auth import PRINCIPAL, Declared, authenticate, sent_no_credential
from pushcore_http.idempotency import claim_key
from pushcore_http.ratelimit import RateLimits, credential_digest

Handler = Callable[[Request], Awaitable[Response]]


class Answered:
    """A public endpoint: its handler called with the request, its answer sent.

    What Starlette's ``request_response`` does, less what nothing here needs: a second
    exception layer around the handler (ExceptionMiddleware, outside the router,
    maps what the handler raises with the same handlers) and the send wrapper that
    layer puts around the answer.
    """

    def __init__(self, handler: Handler) -> None:
        self.handler = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self.handler(Request(scope, receive, send))
        await response(scope, receive, send)


class Authenticated:
    """Authenticates, rate limits, checks the scope and claims the Idempotency-Key of
    the requests of one endpoint, as it declared; then answers as :class:`Answered`,
    with the same request (one per request: its headers parsed once)."""

    def __init__(
        self,
        handler: Handler,
        declared: Declared,
        services: Services,
        limits: RateLimits | None,
    ) -> None:
        assert declared.accepts is not None, "a public endpoint needs no layer"
        self.handler = handler
        self.declared = declared
        self._services = services
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        declared = self.declared
        assert declared.accepts is not None
        request = Request(scope, receive, send)
        if not (declared.optional and sent_no_credential(request.headers)):
            caller = await authenticate(request.headers, self._services, declared.accepts)
            if self.limits is not None:
                self.limits.charge_account(caller.account_id, credential_digest(scope))
            if declared.scope is not None:
                caller.require(declared.scope)
            if declared.idempotent and scope["method"] == "POST":
                replay = await claim_key(request, self._services, caller)
                if replay is not receive:  # the body read for the claim, given again
                    receive = replay
                    request = Request(scope, receive, send)
            scope[PRINCIPAL] = caller
        response = await self.handler(request)
        await response(scope, receive, send)
