"""/api/webpush/vapid-public-key: what a web client needs to subscribe (no auth)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from pushcore_http.answers import answer, ref
from pushcore_http.auth import PUBLIC
from pushcore_http.endpoints import Endpoints
from pushcore_http.rendering import JSONResponse
from pushcore_http.routes import services_of

_ABOUT = "The VAPID public key: an uncompressed P-256 point, base64url."
_KEY = {"publicKey": {"type": "string", "description": _ABOUT}}
# The answer is made here, not from a view.
routes = Endpoints(
    "Devices",
    {
        "VapidPublicKey": {"type": "object", "properties": _KEY, "required": ["publicKey"]}
        | {"additionalProperties": False}
    },
)


@routes.get(
    "/api/webpush/vapid-public-key",
    "The VAPID public key",
    PUBLIC,
    answer(200, "The key.", ref("VapidPublicKey")),
    "The `applicationServerKey` for `PushManager.subscribe()` in a browser. No authentication.",
)
async def vapid_public_key(request: Request) -> Response:
    """GET: the VAPID public key, base64url, for PushManager.subscribe()."""
    return JSONResponse({"publicKey": services_of(request).vapid_public_key})
