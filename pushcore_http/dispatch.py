"""Finding a request's route without trying every route before it.

Starlette's router tries its routes in order, and each try costs a regular
expression and a scope copy (2-3 µs). The route table sorts fixed paths before
parameters segment by segment (:func:`pushcore_http.endpoints.route_table`), so
``/healthz`` came 59th of 62 routes: ~150 µs of trying on every health check,
more than the whole request cost before the table grew (docs/benchmarks.md,
"Ingest"). :class:`IndexedRoutes` answers the same route the router would:

- a path that is exactly one fixed route's path goes to that route, when no route
  before it in the table could match the path (checked once, at start) and the
  route takes the method (a full match);
- any other path is tried against the routes with parameters only, in the table's
  order: a fixed route matches nothing but its own path;
- whatever is left (a 404, a 405, a trailing-slash redirect, a method a fixed route
  outside /api/ does not take) goes to the router itself, which tries them all.
"""

from __future__ import annotations

from starlette._utils import get_route_path
from starlette.routing import BaseRoute, Match, Route, Router
from starlette.types import Receive, Scope, Send


def _fixed(route: BaseRoute) -> str | None:
    """The path of a route that matches only that one path, else None."""
    if isinstance(route, Route) and not route.param_convertors:
        return route.path
    return None


class IndexedRoutes:
    """Pure ASGI: the router's own choice of route for each request, found by path."""

    def __init__(self, router: Router) -> None:
        self.router = router
        self.exact: dict[str, Route] = {}
        self.parametric: list[BaseRoute] = []
        earlier: list[BaseRoute] = []
        for route in router.routes:
            path = _fixed(route)
            if path is None:
                self.parametric.append(route)
            elif path not in self.exact and not any(_could_match(r, path) for r in earlier):
                assert isinstance(route, Route)
                self.exact[path] = route
            else:  # shadowed by an earlier route: the router decides (never, today)
                self.parametric.append(route)
            earlier.append(route)

    def pick(self, scope: Scope) -> tuple[BaseRoute, Scope] | None:
        """The route that fully matches an HTTP ``scope`` and its child scope, when found
        without the router; None: the router decides."""
        path = get_route_path(scope)
        route = self.exact.get(path)
        if route is not None:
            match, child = route.matches(scope)
            return (route, child) if match is Match.FULL else None
        for candidate in self.parametric:
            match, child = candidate.matches(scope)
            if match is Match.FULL:
                return candidate, child
            if match is Match.PARTIAL:
                return None  # the router picks the first partial match, or a later full one
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        picked = self.pick(scope) if scope["type"] == "http" else None
        if picked is None:
            await self.router.app(scope, receive, send)
            return
        route, child = picked
        scope.setdefault("router", self.router)
        scope["route"] = route
        scope.update(child)
        await route.handle(scope, receive, send)


def _could_match(route: BaseRoute, path: str) -> bool:
    """Whether ``route`` (earlier in the table) could match a request for ``path``."""
    regex = getattr(route, "path_regex", None)
    return regex is None or regex.match(path) is not None


def index_routes(router: Router) -> None:
    """Put :class:`IndexedRoutes` in front of ``router``'s routes (once its routes are final)."""
    router.middleware_stack = IndexedRoutes(router)
