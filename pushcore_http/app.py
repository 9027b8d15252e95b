"""The Starlette application factory."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.middleware import Middleware

from pushcore.bootstrap import build_engine, build_metrics
from pushcore.services import Services
from pushcore_http import address_limits, signin_limits
from pushcore_http.answers import Json
from pushcore_http.dispatch import index_routes
from pushcore_http.endpoints import Endpoint, route_table
from pushcore_http.errors import EXCEPTION_HANDLERS
from pushcore_http.guard import RefuseNulPaths
from pushcore_http.idempotency import IdempotentPosts, Replayed, replayed
from pushcore_http.instrument import RequestMetrics
from pushcore_http.openapi import document_of
from pushcore_http.ratelimit import RateLimit, rate_limits
from pushcore_http.routes import (
    app_session,
    devices,
    docs,
    health,
    inbox,
    keys,
    live,
    notifications,
    oidc,
    people,
    prometheus,
    receipts,
    schedules,
    streams,
    web_app,
    webhooks,
    webpush,
)

if TYPE_CHECKING:
    # Built by the composition root, and only where it runs: a local pushctl
    # command's app in process has no engine (docs/benchmarks.md, "Quick start").
    from pushcore.delivery import DeliveryEngine
    from pushcore.metrics import Metrics


OPERATIONS: tuple[Endpoint, ...] = (*health.routes, *prometheus.routes)
"""What a worker's ops app serves: liveness, readiness and metrics."""
ENDPOINTS: tuple[Endpoint, ...] = (
    *OPERATIONS,
    *docs.routes,
    *keys.routes,
    *devices.routes,
    *webpush.routes,
    *notifications.routes,
    *schedules.routes,
    *receipts.routes,
    *streams.routes,
    *inbox.routes,
    *live.routes,
    *people.routes,
    *oidc.routes,
    *app_session.routes,
    *web_app.routes,
    *webhooks.routes,
    *webhooks.events_routes,
)
"""Every endpoint of the API app, as declared beside its handler: its route table and
its /openapi.json are made from these."""


def openapi_document() -> Json:
    """A fresh copy of the OpenAPI document of :data:`ENDPOINTS` (what /openapi.json serves)."""
    return document_of(ENDPOINTS)


def create_app(
    services: Services,
    *,
    engine: DeliveryEngine | None = None,
    run_engine: bool = True,
    metrics: Metrics | None = None,
) -> Starlette:
    """An ASGI app serving the API on ``services``.

    Its lifespan runs the delivery engine beside the API (unless ``run_engine``
    is False: an API-only process in a scaled-out deployment), and at shutdown
    lets in-flight deliveries finish or hands them back, then closes the store.
    ``metrics`` (built by :func:`pushcore.bootstrap.build_metrics` when not
    given) are served at ``/metrics``; an ``engine`` passed in reports to them
    only if it was built with them.
    """
    metrics = metrics or build_metrics(services)
    limits = rate_limits(services.settings)
    # Each endpoint behind the layer its credential asks for (authentication, the
    # account's rate limit, Idempotency-Key).
    routes = route_table(ENDPOINTS, services, limits)
    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(RequestMetrics, metrics=metrics, routes=routes),
            Middleware(RefuseNulPaths),
            Middleware(RateLimit, limits=limits),
            Middleware(IdempotentPosts, services=services),
        ],
        exception_handlers={**EXCEPTION_HANDLERS, Replayed: replayed},
        lifespan=_lifespan(services, engine if run_engine else None, run_engine, metrics),
    )
    index_routes(app.router)
    if services.settings.oidc_enabled:
        oidc.hide_callback_queries()
    if services.settings.rate_limit > 0:
        setattr(app.state, signin_limits.STATE_KEY, signin_limits.SigninLimits())
        setattr(app.state, address_limits.STATE_KEY, address_limits.AddressLimits())
    return _with_state(app, services, metrics)


def create_ops_app(services: Services, *, metrics: Metrics | None = None) -> Starlette:
    """`pushctl worker --port`: the delivery engine in the lifespan, and only
    ``/healthz``, ``/readyz`` and ``/metrics`` to watch it by (no API)."""
    metrics = metrics or build_metrics(services)
    routes = route_table(OPERATIONS, services, None)
    app = Starlette(
        routes=routes,
        middleware=[Middleware(RequestMetrics, metrics=metrics, routes=routes)],
        exception_handlers=EXCEPTION_HANDLERS,
        lifespan=_lifespan(services, None, True, metrics),
    )
    index_routes(app.router)
    return _with_state(app, services, metrics)


def _with_state(app: Starlette, services: Services, metrics: Metrics) -> Starlette:
    app.state.services = services
    app.state.metrics = metrics
    app.state.readiness = health.DatabaseProbe(services.store)
    app.state.engine = None
    app.state.endpoints = ENDPOINTS
    return app


def _lifespan(
    services: Services, engine: DeliveryEngine | None, run_engine: bool, metrics: Metrics
) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    """Run the engine (unless not ``run_engine``) while the app serves; at shutdown let
    in-flight deliveries finish or hand them back, then close the store."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        running: DeliveryEngine | None = None
        task: asyncio.Task[None] | None = None
        # The VAPID key pair this process shares with the others on the database:
        # a data directory holding another one stops the start, not a later request.
        services.vapid_key()
        if run_engine:
            running = engine or build_engine(services, metrics=metrics)
            task = running.start()
        app.state.engine = running
        try:
            yield
        finally:
            if running is not None and task is not None:
                await running.stop()
                await task
            await services.live.aclose()
            # A readiness ping may still wait out the store's bounds (seconds).
            await app.state.readiness.finish(timeout=10.0)
            services.close()

    return lifespan
