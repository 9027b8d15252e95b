"""GET /metrics: Prometheus text format (or OpenMetrics when asked), without authentication."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from pushcore.metrics import Metrics


async def metrics(request: Request) -> Response:
    """GET /metrics: the app's own registry, with the queue read from the database now."""
    registry: Metrics = request.app.state.metrics
    # Off the event loop: the queue gauges query the database.
    body, content_type = await run_in_threadpool(registry.exposition, request.headers.get("accept"))
    return Response(body, headers={"Content-Type": content_type})


routes = [Route("/metrics", metrics, methods=["GET"])]
