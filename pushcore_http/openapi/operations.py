"""OpenAPI of the operations endpoints: health, readiness, metrics, this document, its page."""

from __future__ import annotations

from pushcore_http.openapi._common import PUBLIC, Json, obj, operation, ref

TAG = "Operations"


def schemas() -> Json:
    """The health schemas."""
    return {
        "Health": obj({"status": {"const": "ok"}}),
        "Readiness": obj(
            {
                "status": {"type": "string", "enum": ["ready", "unavailable"]},
                "checks": obj(
                    {
                        "database": {"type": "string", "enum": ["ok", "down"]},
                        "scheduler": {
                            "type": "string",
                            "enum": ["running", "stopped"],
                            "description": "Absent in an API-only process (no scheduler).",
                        },
                    },
                    required=["database"],
                ),
            }
        ),
    }


def _plain(summary: str, description: str, media: Json) -> Json:
    """An unauthenticated GET whose answer is not JSON."""
    return {
        "tags": [TAG],
        "summary": summary,
        "description": description,
        "security": PUBLIC,
        "responses": {"200": {"description": summary, "content": media}},
    }


def paths() -> Json:
    """The operations endpoints; none needs credentials."""
    readiness = ref("Readiness")
    ready = operation(
        "Readiness",
        tag=TAG,
        security=PUBLIC,
        description="200 when the database answers and the scheduler runs (if this process "
        "runs one), else 503 naming the failed check.",
        ok=(200, "Ready.", readiness),
        example={"status": "ready", "checks": {"database": "ok", "scheduler": "running"}},
        responses={
            503: {
                "description": "Not ready.",
                "content": {"application/json": {"schema": readiness}},
            }
        },
    )
    text = {"type": "string"}
    return {
        "/healthz": {
            "get": operation(
                "Liveness",
                tag=TAG,
                security=PUBLIC,
                description="200 while the process answers.",
                ok=(200, "Alive.", ref("Health")),
            )
        },
        "/readyz": {"get": ready},
        "/metrics": {
            "get": _plain(
                "Prometheus metrics",
                "Prometheus text format, or OpenMetrics when the `Accept` header asks for "
                "`application/openmetrics-text`. No authentication: keep it off the public "
                "internet (see the deployment guide). Metric names are in docs/deployment.md.",
                {
                    "text/plain": {"schema": text},
                    "application/openmetrics-text": {"schema": text},
                },
            )
        },
        "/openapi.json": {
            "get": _plain(
                "This OpenAPI document",
                "OpenAPI 3.1, describing every endpoint.",
                {"application/json": {"schema": {"type": "object"}}},
            )
        },
        "/docs": {
            "get": _plain(
                "API reference page",
                "A self-contained HTML page that renders /openapi.json (no CDN: works offline).",
                {"text/html": {"schema": text}},
            )
        },
    }
