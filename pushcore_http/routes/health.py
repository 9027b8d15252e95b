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
    """GET /readyz: 200 when the database answers and the scheduler runs, 503 otherwise."""
    checks = {"database": "ok"}
    try:
        await run_in_threadpool(services_of(request).store.ping)
    except Exception:  # any failure to reach the database means not ready
        checks["database"] = "down"
    engine = request.app.state.engine
    if engine is not None:
        checks["scheduler"] = "running" if engine.running else "stopped"
    ready = checks["database"] == "ok" and checks.get("scheduler", "running") == "running"
    return JSONResponse(
        {"status": "ready" if ready else "unavailable", "checks": checks}, 200 if ready else 503
    )


routes = [
    Route("/healthz", healthz, methods=["GET"]),
    Route("/readyz", readyz, methods=["GET"]),
]
