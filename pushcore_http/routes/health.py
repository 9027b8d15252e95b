"""Liveness and readiness."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from pushcore_http.routes import services_of


async def healthz(_request: Request) -> Response:
    """GET /healthz: the process answers."""
    return JSONResponse({"status": "ok"})


async def readyz(request: Request) -> Response:
    """GET /readyz: 200 when the database answers, 503 otherwise."""
    try:
        await run_in_threadpool(services_of(request).store.ping)
    except Exception:
        return JSONResponse({"status": "unavailable", "checks": {"database": "down"}}, 503)
    return JSONResponse({"status": "ready", "checks": {"database": "ok"}})


routes = [
    Route("/healthz", healthz, methods=["GET"]),
    Route("/readyz", readyz, methods=["GET"]),
]
