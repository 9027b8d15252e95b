"""The Starlette application factory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette

from pushcore.services import Services
from pushcore_http.errors import EXCEPTION_HANDLERS
from pushcore_http.routes import devices, health, keys


def create_app(services: Services) -> Starlette:
    """An ASGI app serving the API on ``services``; the lifespan closes them at shutdown."""

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            services.close()

    app = Starlette(
        routes=[*health.routes, *keys.routes, *devices.routes],
        exception_handlers=EXCEPTION_HANDLERS,
        lifespan=lifespan,
    )
    app.state.services = services
    return app
