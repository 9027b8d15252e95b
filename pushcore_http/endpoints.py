"""Each endpoint declared once, beside its handler; the route table and /openapi.json
are both built from the declarations.

A route module declares its endpoints on one :class:`Endpoints` (the OpenAPI tag they
are listed under)::

    routes = Endpoints("API keys")

    @routes.post(
        "/api/keys", "Create an API key", USER,
        answer(201, "The key, with its secret (shown this once).", ApiKeyCreatedView),
        body=NewApiKey,
    )
    async def create(request: Request) -> Response: ...

A declaration says the path, the method, the credential (``USER``, ``key(scope)``,
``either(scope)``, ``PUBLIC``: :mod:`pushcore_http.auth`), the answers (views and the
refusals built from the error tree, :mod:`pushcore_http.openapi.answers`), the summary
and description, the request body's type and the query parameters. :func:`route_table`
makes one route per path, each method behind the layer its credential asks for
(:mod:`pushcore_http.layers`); :func:`pushcore_http.openapi.document_of` makes the
document's paths, security and Idempotency-Key header from the same values, so what the
app enforces and what the document says cannot disagree. The credential is a required
argument: an endpoint that declares none cannot be written.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

import attrs
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from pushcore.services import Services
from pushcore_http.auth import Declared
from pushcore_http.layers import Answered, Authenticated
from pushcore_http.ratelimit import RateLimits

Json = dict[str, Any]
Handler = Callable[[Request], Awaitable[Response]]
H = TypeVar("H", bound=Handler)

# The order a 405's Allow names methods in (HTTPEndpoint's).
_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
API = "/api/"


@attrs.frozen(eq=False)
class Endpoint:
    """One endpoint: what the route table serves and the document says of it."""

    method: str
    path: str
    summary: str
    credential: Declared
    handler: Handler
    tag: str | None
    """The OpenAPI tag it is listed under; None: not in the document (the app's pages)."""
    answers: Json = attrs.field(factory=dict)
    description: str = ""
    body: type[Any] | None = None
    """The class the JSON body is read into (the document's request schema and example)."""
    text_body: bool = False
    """Whether a text body publishes too (``curl -d "Backup done" URL``)."""
    parameters: tuple[Json, ...] = ()
    """Query and header parameters (the path's own are derived from the path)."""
    schemas: Mapping[str, Json] = attrs.field(factory=dict)
    """Schemas written by hand that its answers or body refer to by name."""


class Endpoints:
    """The endpoints of a route module, in the order declared, under one tag."""

    def __init__(self, tag: str | None, schemas: Mapping[str, Json] | None = None) -> None:
        self.tag = tag
        self.schemas = schemas or {}
        self._declared: list[Endpoint] = []

    def __iter__(self) -> Iterator[Endpoint]:
        return iter(self._declared)

    def get(
        self,
        path: str,
        summary: str,
        credential: Declared,
        answers: Json | None = None,
        description: str = "",
        *,
        parameters: Iterable[Json] = (),
    ) -> Callable[[H], H]:
        """Declare a GET (HEAD is answered by it too); see :meth:`declare`."""
        return self.declare(
            "GET", path, summary, credential, answers, description, parameters=parameters
        )

    def post(
        self,
        path: str,
        summary: str,
        credential: Declared,
        answers: Json | None = None,
        description: str = "",
        *,
        body: type[Any] | None = None,
        text_body: bool = False,
    ) -> Callable[[H], H]:
        """Declare a POST; see :meth:`declare`."""
        return self.declare(
            "POST", path, summary, credential, answers, description, body=body, text_body=text_body
        )

    def delete(
        self,
        path: str,
        summary: str,
        credential: Declared,
        answers: Json | None = None,
        description: str = "",
    ) -> Callable[[H], H]:
        """Declare a DELETE; see :meth:`declare`."""
        return self.declare("DELETE", path, summary, credential, answers, description)

    def declare(
        self,
        method: str,
        path: str,
        summary: str,
        credential: Declared,
        answers: Json | None = None,
        description: str = "",
        *,
        body: type[Any] | None = None,
        text_body: bool = False,
        parameters: Iterable[Json] = (),
    ) -> Callable[[H], H]:
        """A decorator declaring its handler as ``method path`` (the handler is unchanged)."""

        def declare(handler: H) -> H:
            self._declared.append(
                Endpoint(
                    method,
                    path,
                    summary,
                    credential,
                    handler,
                    self.tag,
                    answers or {},
                    description,
                    body,
                    text_body,
                    tuple(parameters),
                    self.schemas,
                )
            )
            return handler

        return declare


class _Methods:
    """A path's endpoints by method (HEAD answered by GET); another method is a 405."""

    def __init__(self, apps: Mapping[str, ASGIApp]) -> None:
        self.apps = dict(apps)
        if "GET" in apps and "HEAD" not in apps:
            self.apps["HEAD"] = apps["GET"]
        self.allow = ", ".join(m for m in _METHODS if m in self.apps)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = self.apps.get(scope["method"])
        if app is None:
            raise HTTPException(405, headers={"Allow": self.allow})
        await app(scope, receive, send)


class PathRoute(Route):
    """The route of one path and its endpoints.

    Under /api/ the path claims every method (another is its own 405), so that a
    fixed path's wrong method cannot fall through to a path with a parameter that
    would take it (``DELETE /api/streams/subscribe`` is not the deletion of a stream
    named "subscribe"). Elsewhere Starlette's rule holds: a method the path does not
    answer goes on to a later route, as the app's shell answers GET on any path of
    /app/.
    """

    def __init__(self, path: str, endpoints: Mapping[str, Endpoint], apps: _Methods) -> None:
        super().__init__(path, apps, name=path)
        self.endpoints = dict(endpoints)
        self.methods_app = apps
        self._claims = (path + "/").startswith(API)

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        """Starlette's match, but a method nobody declared here matches only partly
        outside /api/."""
        match, child = super().matches(scope)
        if (
            match is Match.FULL
            and not self._claims
            and scope["method"] not in self.methods_app.apps
        ):
            return Match.PARTIAL, child
        return match, child


def _app(endpoint: Endpoint, services: Services, limits: RateLimits | None) -> ASGIApp:
    if endpoint.credential.accepts is None:
        return Answered(endpoint.handler)
    return Authenticated(endpoint.handler, endpoint.credential, services, limits)


def _fixed_first(path: str) -> list[tuple[bool, str]]:
    # Segment by segment, a fixed one before a parameter: /api/streams/subscribe before
    # /api/streams/{stream_id}, whatever order the modules declared them in.
    return [(segment.startswith("{"), segment) for segment in path.split("/")]


def route_table(
    endpoints: Iterable[Endpoint], services: Services, limits: RateLimits | None
) -> list[PathRoute]:
    """One :class:`PathRoute` per path, fixed paths before those with parameters, each
    endpoint behind the layer its credential asks for; ValueError for a method declared
    twice on a path."""
    by_path: dict[str, dict[str, Endpoint]] = {}
    for endpoint in endpoints:
        methods = by_path.setdefault(endpoint.path, {})
        if endpoint.method in methods:
            raise ValueError(f"{endpoint.method} {endpoint.path} is declared twice")
        methods[endpoint.method] = endpoint
    return [
        PathRoute(
            path,
            methods,
            _Methods({m: _app(e, services, limits) for m, e in methods.items()}),
        )
        for path, methods in sorted(by_path.items(), key=lambda item: _fixed_first(item[0]))
    ]
