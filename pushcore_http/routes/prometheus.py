"""GET /metrics: Prometheus text format (or OpenMetrics when asked), without authentication."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from pushcore.metrics import Metrics
from pushcore_http.answers import answer
from pushcore_http.auth import PUBLIC
from pushcore_http.endpoints import Endpoints

routes = Endpoints("Operations")
_OPENMETRICS = "application/openmetrics-text"


@routes.get(
    "/metrics",
    "Prometheus metrics",
    PUBLIC,
    answer(200, "Prometheus metrics", {"type": "string"}, "text/plain", _OPENMETRICS),
    "Prometheus text format, or OpenMetrics when the `Accept` header asks for "
    f"`{_OPENMETRICS}`. No authentication: keep it off the public internet (see the "
    "deployment guide). Metric names are in docs/deployment.md.",
)
async def metrics(request: Request) -> Response:
    """GET /metrics: the app's own registry, with the queue read from the database now."""
    registry: Metrics = request.app.state.metrics
    # Off the event loop: the queue gauges query the database.
    body, content_type = await run_in_threadpool(registry.exposition, request.headers.get("accept"))
    return Response(body, headers={"Content-Type": content_type})
