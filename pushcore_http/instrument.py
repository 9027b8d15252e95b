"""Request metrics: a pure ASGI middleware (no BaseHTTPMiddleware: no extra task per request)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from starlette.routing import BaseRoute, Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pushcore.metrics import Metrics

UNMATCHED = "<unmatched>"
"""The ``route`` label of a request no route matched (scanners, typos): one value
for them all, so that random paths cannot grow the number of series."""

# Anything else (a client may send any token as a method) is counted as "OTHER".
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def route_template(routes: Sequence[BaseRoute], scope: Scope) -> str:
    """The path template of the route the router will pick for ``scope``
    (``/api/devices/{device_id}``), also when only the path matched (a 405)."""
    partial: str | None = None
    for route in routes:
        match, _ = route.matches(scope)
        if match is Match.FULL and isinstance(route, Route):
            return route.path
        if match is Match.PARTIAL and partial is None and isinstance(route, Route):
            partial = route.path
    return partial or UNMATCHED


class RequestMetrics:
    """Counts and times every HTTP request by method, route template and status."""

    def __init__(self, app: ASGIApp, metrics: Metrics, routes: Sequence[BaseRoute]) -> None:
        self.app = app
        self._metrics = metrics
        self._routes = routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        method = scope["method"] if scope["method"] in METHODS else "OTHER"
        # An exception that escapes before a response started becomes the
        # outer error middleware's 500.
        status = 500

        async def send_and_note(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        finally:
            # The router notes the route it picked in the scope: no second matching of
            # every route, except for a request answered before routing (refused early).
            picked = scope.get("route")
            if isinstance(picked, Route):
                route = picked.path
            else:
                route = route_template(self._routes, scope)
            self._metrics.observe_request(method, route, status, time.perf_counter() - start)
