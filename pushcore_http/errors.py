"""The one error map of the HTTP adapter: error class -> status, looked up along the MRO."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from pushcore.domain import errors as e
from pushcore_http.rendering import JSONResponse

log = logging.getLogger("pushcore.http")

STATUS: dict[type[e.PushcoreError], int] = {
    e.ValidationError: 400,
    e.InvalidJson: 400,
    e.Unauthorized: 401,
    e.Forbidden: 403,
    e.NotFound: 404,
    e.Conflict: 409,
    e.RevisionMismatch: 412,
    e.PayloadTooLarge: 413,
    e.UnsupportedMediaType: 415,
    e.IdempotencyKeyReused: 422,
    e.RateLimited: 429,
    e.Unavailable: 503,
    e.PushcoreError: 500,
}


def status_for(error: e.PushcoreError) -> int:
    """The HTTP status of an error: that of the nearest class in the table."""
    for cls in type(error).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 500


def error_response(
    status: int, message: str, code: str, headers: Mapping[str, str] | None = None, **extra: Any
) -> JSONResponse:
    """The API.md error shape: ``{"error", "code"}`` plus any extra members."""
    return JSONResponse({"error": message, "code": code, **extra}, status, headers=headers)


async def pushcore_error(_request: Request, exc: Exception) -> Response:
    """Map a PushcoreError to its status and body."""
    assert isinstance(exc, e.PushcoreError)
    status = status_for(exc)
    headers: dict[str, str] = {}
    extra: dict[str, Any] = {}
    if isinstance(exc, e.ValidationError):
        extra["details"] = [{"field": d.field, "message": d.message} for d in exc.details]
    if isinstance(exc, e.Unauthorized):
        # RFC 6750 §3: what to do instead rides in the challenge (and, where API.md
        # shows it, after the pinned words of the message).
        headers["WWW-Authenticate"] = (
            "Bearer" if exc.hint is None else f'Bearer error_description="{exc.hint}"'
        )
    if isinstance(exc, (e.RateLimited, e.Unavailable)):
        headers["Retry-After"] = str(exc.retry_after)
    if isinstance(exc, e.Unavailable):
        # An outage of the database, not a bug: said once per request, without a traceback.
        log.warning("database unavailable: %s", exc.message)
    elif status >= 500:
        log.error("unexpected %s: %s", type(exc).__name__, exc.message)
        return error_response(500, "Internal server error", "internal_error")
    return error_response(status, exc.message, exc.code, headers, **extra)


async def http_error(_request: Request, exc: Exception) -> Response:
    """Starlette's own 404/405 (unknown route or method) in the API.md shape."""
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405:
        return error_response(405, "Method not allowed", "method_not_allowed", exc.headers)
    if exc.status_code == 404:
        return error_response(404, e.NO_SUCH_ENDPOINT, "not_found")
    return error_response(exc.status_code, str(exc.detail), "http_error", exc.headers)


CLIENT_CLOSED_REQUEST = 499
"""nginx's status for a client that went away before the answer: never sent (nobody is
there to read it), it only labels the request in metrics and logs."""


async def client_gone(_request: Request, _exc: Exception) -> Response:
    """A client that left mid-body is not an error of the service: no traceback, no 5xx."""
    log.debug("client disconnected before its request body was read")
    return Response(status_code=CLIENT_CLOSED_REQUEST)


async def unexpected_error(_request: Request, exc: Exception) -> Response:
    """Anything else is a bug: log it with its traceback, answer a plain 500."""
    log.exception("unhandled error", exc_info=exc)
    return error_response(500, "Internal server error", "internal_error")


EXCEPTION_HANDLERS = {
    e.PushcoreError: pushcore_error,
    HTTPException: http_error,
    ClientDisconnect: client_gone,
    Exception: unexpected_error,
}
