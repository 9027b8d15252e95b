"""OpenAPI of the operations endpoints: health, readiness, metrics, this document, its page."""

from __future__ import annotations

from functools import partial

from pushcore_http.openapi import _common as api

_public = partial(api.operation, api.PUBLIC)


def _object(properties: api.Json, *required: str) -> api.Json:
    closed = {"type": "object", "properties": properties, "additionalProperties": False}
    return closed | {"required": list(required or properties)}


def schemas() -> api.Json:
    """The answers of /healthz and /readyz (made by their routes: no views)."""
    scheduler = {"type": "string", "enum": ["running", "stopped"]}
    checks = {
        "database": {"type": "string", "enum": ["ok", "down"]},
        "scheduler": scheduler | {"description": "Absent in an API-only process (no scheduler)."},
    }
    status = {"type": "string", "enum": ["ready", "unavailable"]}
    return {
        "Health": _object({"status": {"const": "ok"}}),
        "Readiness": _object({"status": status, "checks": _object(checks, "database")}),
    }


def operations() -> api.Json:
    """The operations endpoints, by method and path; none needs credentials."""
    text, metrics = {"type": "string"}, "application/openmetrics-text"
    return {
        "get /healthz: Liveness": _public(
            api.answer(200, "Alive.", api.ref("Health")),
            "200 while the process answers.",
        ),
        "get /readyz: Readiness": _public(
            api.answer(200, "Ready.", api.ref("Readiness"))
            | api.answer(503, "Not ready.", api.ref("Readiness")),
            "200 when the database answers and the scheduler runs (if this process runs one), "
            "else 503 naming the failed check.",
        ),
        "get /metrics: Prometheus metrics": _public(
            api.answer(200, "Prometheus metrics", text, "text/plain", metrics),
            "Prometheus text format, or OpenMetrics when the `Accept` header asks for "
            f"`{metrics}`. No authentication: keep it off the public internet (see the "
            "deployment guide). Metric names are in docs/deployment.md.",
        ),
        "get /openapi.json: This OpenAPI document": _public(
            api.answer(200, "This OpenAPI document", {"type": "object"}, api.JSON),
            "OpenAPI 3.1, describing every endpoint.",
        ),
        "get /docs: API reference page": _public(
            api.answer(200, "API reference page", text, "text/html"),
            "A self-contained HTML page that renders /openapi.json (no CDN: works offline).",
        ),
    }
