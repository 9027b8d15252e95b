"""The layer in front of every endpoint, applied when the route table is built.

:func:`layered` puts each route behind :class:`Authenticated`, which does,
for each method as its endpoint declared it (:mod:`pushcore_http.auth`), in
this order (which tests/http pins: a bad credential's 401 before the 429, the
429 before a missing scope's 401, all three before the body is read):

1. authentication: the caller, resolved once per request from the declared
   kind of credential (401 otherwise);
2. the rate limit of the caller's account (429);
3. the scope an API key needs (401);
4. for a POST, the Idempotency-Key claim (:func:`claim_key`; 400, 409, 422 or
   the kept answer), unless declared otherwise;

then the endpoint runs, with the caller in the request (:func:`caller_of`).
A public endpoint (``@public``) gets none of them. An endpoint under ``/api/``
that declares nothing, or an app mounted there whose endpoints cannot be
seen, is refused when the app is built (:class:`UndeclaredEndpoint`), so no
route can forget its credential, its rate limit or its Idempotency-Key.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Mapping, Sequence

from starlette.endpoints import HTTPEndpoint
from starlette.requests import Request
from starlette.routing import BaseRoute, Mount, Route, Router
from starlette.types import ASGIApp, Receive, Scope, Send

from pushcore.services import Services
from pushcore_http.auth import PRINCIPAL, Declared, authenticate, declaration_of
from pushcore_http.idempotency import claim_key
from pushcore_http.ratelimit import RateLimits, credential_digest

API = "/api/"
# HTTPEndpoint's own list of the methods it may answer.
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "QUERY")


class UndeclaredEndpoint(TypeError):
    """An endpoint under /api/ that does not say which credential it takes (a bug)."""


class Authenticated:
    """Authenticates, rate limits, checks the scope and claims the Idempotency-Key of
    the requests of one route, as its endpoint declared per method."""

    def __init__(
        self,
        app: ASGIApp,
        declared: Mapping[str, Declared],
        services: Services,
        limits: RateLimits | None,
    ) -> None:
        self.app = app
        self.declared = declared
        self._services = services
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        declared = self.declared.get(scope["method"])
        # A method the endpoint does not answer goes on to its 405, unauthenticated.
        if declared is None or declared.accepts is None:
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        caller = await authenticate(request.headers, self._services, declared.accepts)
        if self.limits is not None:
            self.limits.charge_account(caller.account_id, credential_digest(scope))
        if declared.scope is not None:
            caller.require(declared.scope)
        if declared.idempotent and scope["method"] == "POST":
            receive = await claim_key(request, self._services, caller)
        scope[PRINCIPAL] = caller
        await self.app(scope, receive, send)


def declarations_of(route: Route) -> dict[str, Declared | None]:
    """What the endpoint of ``route`` declared for each method it answers."""
    endpoint = route.endpoint
    if inspect.isclass(endpoint):
        if not issubclass(endpoint, HTTPEndpoint):
            # A bare ASGI class: which methods it answers cannot be seen.
            return dict.fromkeys(METHODS)
        found: dict[str, Declared | None] = {}
        for method in METHODS:
            handler = getattr(endpoint, method.lower(), None)
            if handler is None and method == "HEAD":
                handler = getattr(endpoint, "get", None)  # as HTTPEndpoint answers HEAD
            if handler is not None:
                found[method] = declaration_of(handler)
        return found
    return {method: declaration_of(endpoint) for method in sorted(route.methods or ())}


def layered(
    routes: Sequence[BaseRoute], services: Services, limits: RateLimits | None
) -> list[BaseRoute]:
    """``routes`` with every endpoint that takes a credential behind :class:`Authenticated`
    (copies: the modules' route lists stay as they are, for the next app);
    UndeclaredEndpoint for one under /api/ that declares nothing."""
    return [_layered(route, "", services, limits) for route in routes]


def _layered(
    route: BaseRoute, prefix: str, services: Services, limits: RateLimits | None
) -> BaseRoute:
    if isinstance(route, Route):
        declarations = declarations_of(route)
        missing = sorted(m for m, d in declarations.items() if d is None)
        if missing and _under_api(prefix + route.path):
            raise UndeclaredEndpoint(
                f"{' '.join(missing)} {prefix + route.path}: declare the credential its"
                " endpoint takes (@authenticated(...) or @public, pushcore_http/auth.py)"
            )
        known = {m: d for m, d in declarations.items() if d is not None}
        if not any(d.accepts is not None for d in known.values()):
            return route
        guarded = copy.copy(route)
        guarded.app = Authenticated(route.app, known, services, limits)
        return guarded
    path = prefix + getattr(route, "path", "")
    if isinstance(route, Mount) and isinstance(route.app, Router):
        children = [_layered(r, path, services, limits) for r in route.routes]
        return Mount(route.path, routes=children, name=route.name)
    # Anything else (a mounted app, a router behind middleware, a websocket) cannot
    # be put behind the layer: fine elsewhere, refused where the API is.
    if _under_api(path) or (isinstance(route, Mount) and route.path == ""):
        raise UndeclaredEndpoint(
            f"{path or '/'}: under /api/, only routes and mounted routers (without"
            " middleware of their own) can declare their credentials"
        )
    return route


def _under_api(path: str) -> bool:
    return (path + "/").startswith(API)
