"""GET /openapi.json (the OpenAPI 3.1 document) and GET /docs (a page that renders it)."""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
from importlib import resources

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from pushcore_http.answers import JSON, answer
from pushcore_http.auth import PUBLIC
from pushcore_http.endpoints import Endpoint, Endpoints
from pushcore_http.openapi import document_of

routes = Endpoints("Operations")


@functools.cache
def _openapi_json(endpoints: tuple[Endpoint, ...]) -> bytes:
    # The document is the same for every request of the app: encode it once.
    return json.dumps(document_of(endpoints), ensure_ascii=False).encode()


def _digest(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


@functools.cache
def _docs_page() -> tuple[str, str]:
    """The page and its Content-Security-Policy: only its own inline script and
    style may run, and it may fetch from this origin only."""
    page = resources.files("pushcore_http").joinpath("docs.html").read_text(encoding="utf-8")
    scripts = re.findall(r"<script>(.*?)</script>", page, re.DOTALL)
    styles = re.findall(r"<style>(.*?)</style>", page, re.DOTALL)
    policy = (
        "default-src 'none'; connect-src 'self'; "
        f"script-src {' '.join(map(_digest, scripts))}; "
        f"style-src {' '.join(map(_digest, styles))}; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
    return page, policy


@routes.get(
    "/openapi.json",
    "This OpenAPI document",
    PUBLIC,
    answer(200, "This OpenAPI document", {"type": "object"}, JSON),
    "OpenAPI 3.1, describing every endpoint.",
)
async def openapi(request: Request) -> Response:
    """GET /openapi.json: the OpenAPI 3.1 document of the app's endpoints (no auth)."""
    return Response(_openapi_json(request.app.state.endpoints), media_type=JSON)


@routes.get(
    "/docs",
    "API reference page",
    PUBLIC,
    answer(200, "API reference page", {"type": "string"}, "text/html"),
    "A self-contained HTML page that renders /openapi.json (no CDN: works offline).",
)
async def docs(_request: Request) -> Response:
    """GET /docs: a self-contained page rendering /openapi.json (no CDN; works offline)."""
    page, policy = _docs_page()
    return HTMLResponse(page, headers={"Content-Security-Policy": policy})
