"""/app/session/*: the app's sign-in, with the refresh token kept in a cookie no script reads.

The app keeps its access token in memory only. What lets a reload resume is the
refresh token, and it lives in a cookie that is ``HttpOnly`` (no script reads
it), ``SameSite=Strict`` (no other site's page sends it), ``Secure`` over HTTPS
and scoped to ``Path=/app/session`` (no other request carries it). These routes
are the only ones that read or set it; each answers the session without the
refresh token.

They do not sign anyone in themselves: each is the pinned ``/api/auth/*``
endpoint, called in process through the whole app (its validation, its rate
limits per account and client address, its error answers), with the refresh
token moved between the JSON body and the cookie. So the app's sign-in cannot
differ from the API's, as pushctl's local mode cannot (docs/architecture.md).

Against cross-site requests, beyond SameSite: a request must carry the
``X-Pushcore-App`` header (a cross-origin page can send it only after a CORS
preflight, which this server never grants), and a browser's ``Sec-Fetch-Site``
or ``Origin``, when present, must say the request comes from this host and port.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message

from pushcore_http.auth import PUBLIC
from pushcore_http.endpoints import Endpoints, Handler
from pushcore_http.errors import error_response
from pushcore_http.rendering import JSONResponse
from pushcore_http.routes import services_of
from pushcore_http.routes.oidc import BROWSER_COOKIE
from pushcore_http.routes.web_app import SECURITY_HEADERS

COOKIE = "pushcore_refresh"
COOKIE_PATH = "/app/session"
APP_HEADER = "x-pushcore-app"
NO_STORE = {**SECURITY_HEADERS, "Cache-Control": "no-store"}
# The app's own: not in /openapi.json. Public: each checks its caller itself (_same_origin).
routes = Endpoints(None)


def _same_origin(request: Request) -> bool:
    """The request is the app's own: the custom header, and nothing saying another site."""
    if request.headers.get(APP_HEADER) != "1":
        return False
    site = request.headers.get("sec-fetch-site")
    if site is not None and site != "same-origin":
        return False
    origin = request.headers.get("origin")
    if origin is None:
        return True
    # The host, not the scheme: behind a proxy that terminates TLS without saying
    # so (X-Forwarded-Proto not trusted), the page is https and the request http.
    return urlsplit(origin).netloc == request.headers.get("host", "")


def _forbidden() -> JSONResponse:
    return error_response(
        403, "This endpoint is for the app's own pages", "cross_site_request", NO_STORE
    )


async def _call_api(
    request: Request, path: str, body: Mapping[str, Any], cookies: Sequence[str] = ()
) -> tuple[int, Any]:
    """POST ``body`` to ``path`` through the whole app, as from the same client, with the
    request's ``cookies`` of these names; status, JSON."""
    payload = json.dumps(body).encode()
    passed = "; ".join(f"{n}={request.cookies[n]}" for n in cookies if n in request.cookies)
    scope = {
        **{k: v for k, v in request.scope.items() if k in ("http_version", "scheme", "server")},
        "type": "http",
        "asgi": {"version": "3.0"},
        "method": "POST",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(payload)).encode()),
            (b"host", request.headers.get("host", "localhost").encode()),
            *([(b"cookie", passed.encode())] if passed else []),
        ],
        "client": request.scope.get("client"),
        "state": {},
    }
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": payload, "more_body": False}

    status = 500
    chunks: list[bytes] = []

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await request.app(scope, receive, send)
    raw = b"".join(chunks)
    return status, json.loads(raw) if raw else None


def _answer(request: Request, status: int, data: Any) -> JSONResponse:
    """The API's answer, its refresh token moved into the cookie."""
    if not (200 <= status < 300 and isinstance(data, dict) and "refreshToken" in data):
        response = JSONResponse(data, status, headers=NO_STORE)
        if status == 401:
            _clear(request, response)
        return response
    token = data.pop("refreshToken")
    response = JSONResponse(data, status, headers=NO_STORE)
    # As long as the token lives (PUSHCORE_REFRESH_TOKEN_TTL): the server's expiry is
    # what counts; this only keeps a dead cookie from lingering.
    lifetime = services_of(request).settings.refresh_token_ttl
    response.set_cookie(
        COOKIE,
        token,
        max_age=int(lifetime.total_seconds()),
        path=COOKIE_PATH,
        secure=request.url.scheme == "https",
        httponly=True,
        samesite="strict",
    )
    return response


def _clear(request: Request, response: Response) -> None:
    response.delete_cookie(
        COOKIE,
        path=COOKIE_PATH,
        secure=request.url.scheme == "https",
        httponly=True,
        samesite="strict",
    )


async def _body(request: Request) -> Any:
    try:
        return await request.json()
    except ValueError:
        return None


def _forwarding(api_path: str, cookies: Sequence[str] = ()) -> Handler:
    """A route that posts the request's JSON to ``api_path`` (with the request's ``cookies``
    of these names) and keeps the token in the cookie."""

    async def endpoint(request: Request) -> Response:
        if not _same_origin(request):
            return _forbidden()
        body = await _body(request)
        if not isinstance(body, dict):
            return error_response(400, "Request body must be a JSON object", "invalid_json")
        status, data = await _call_api(request, api_path, body, cookies)
        return _answer(request, status, data)

    endpoint.__doc__ = f"POST: {api_path}, the refresh token set as the app's cookie."
    return endpoint


@routes.post("/app/session/refresh", "Refresh the app's session", PUBLIC)
async def refresh(request: Request) -> Response:
    """POST /app/session/refresh: a new session from the cookie's refresh token (which rotates)."""
    if not _same_origin(request):
        return _forbidden()
    token = request.cookies.get(COOKIE)
    if not token:
        return error_response(401, "Not signed in", "unauthorized", NO_STORE)
    status, data = await _call_api(request, "/api/auth/refresh", {"refreshToken": token})
    return _answer(request, status, data)


@routes.post("/app/session/logout", "Sign the app out", PUBLIC)
async def logout(request: Request) -> Response:
    """POST /app/session/logout: the refresh token revoked and the cookie cleared."""
    if not _same_origin(request):
        return _forbidden()
    token = request.cookies.get(COOKIE)
    if token:
        await _call_api(request, "/api/auth/logout", {"refreshToken": token})
    response = JSONResponse({"success": True}, headers=NO_STORE)
    _clear(request, response)
    return response


# Each the pinned /api/auth/ endpoint, called in process.
routes.post("/app/session/login", "Sign the app in", PUBLIC)(_forwarding("/api/auth/login"))
routes.post("/app/session/signup", "Sign up in the app", PUBLIC)(_forwarding("/api/auth/signup"))
# The one-time code is good only with the cookie of the browser that started.
routes.post("/app/session/oidc", "Finish the app's single sign-on", PUBLIC)(
    _forwarding("/api/auth/oidc/exchange", (BROWSER_COOKIE,))
)
