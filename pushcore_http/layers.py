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

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from pushcore.services import Services
from pushcore_http.auth import PRINCIPAL, Declared, authenticate, sent_no_credential
from pushcore_http.idempotency import claim_key
from pushcore_http.ratelimit import RateLimits, credential_digest


class Authenticated:
    """Authenticates, rate limits, checks the scope and claims the Idempotency-Key of
    the requests of one endpoint, as it declared."""

    def __init__(
        self,
        app: ASGIApp,
        declared: Declared,
        services: Services,
        limits: RateLimits | None,
    ) -> None:
        assert declared.accepts is not None, "a public endpoint needs no layer"
        self.app = app
        self.declared = declared
        self._services = services
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        declared = self.declared
        assert declared.accepts is not None
        request = Request(scope, receive)
        if declared.optional and sent_no_credential(request.headers):
            await self.app(scope, receive, send)
            return
        caller = await authenticate(request.headers, self._services, declared.accepts)
        if self.limits is not None:
            self.limits.charge_account(caller.account_id, credential_digest(scope))
        if declared.scope is not None:
            caller.require(declared.scope)
        if declared.idempotent and scope["method"] == "POST":
            receive = await claim_key(request, self._services, caller)
        scope[PRINCIPAL] = caller
        await self.app(scope, receive, send)
