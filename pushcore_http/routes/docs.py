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
from starlette.routing import Route

from pushcore_http.openapi import openapi_document


@functools.cache
def _openapi_json() -> bytes:
    # The document is the same for every request of the process: encode it once.
    return json.dumps(openapi_document(), ensure_ascii=False).encode()


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


async def openapi(_request: Request) -> Response:
    """GET /openapi.json: the OpenAPI 3.1 document of every endpoint (no auth)."""
    return Response(_openapi_json(), media_type="application/json")


async def docs(_request: Request) -> Response:
    """GET /docs: a self-contained page rendering /openapi.json (no CDN; works offline)."""
    page, policy = _docs_page()
    return HTMLResponse(page, headers={"Content-Security-Policy": policy})


routes = [
    Route("/openapi.json", openapi, methods=["GET"]),
    Route("/docs", docs, methods=["GET"]),
]
