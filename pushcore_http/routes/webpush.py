"""/api/webpush/vapid-public-key: what a web client needs to subscribe (no auth)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from pushcore_http.auth import public
from pushcore_http.routes import services_of


@public
async def vapid_public_key(request: Request) -> Response:
    """GET: the VAPID public key, base64url, for PushManager.subscribe()."""
    return JSONResponse({"publicKey": services_of(request).vapid_public_key})


routes = [Route("/api/webpush/vapid-public-key", vapid_public_key, methods=["GET"])]
