"""An error answer of the API as the library's own exception."""

from __future__ import annotations

import re
from typing import Any

import httpx

from pushcore.domain import errors as e

# The API's error codes (API.md "Conventions"), and the class each raises.
CODES: dict[str, type[e.PushcoreError]] = {
    "validation_error": e.ValidationError,
    "invalid_json": e.InvalidJson,
    "unauthorized": e.Unauthorized,
    "forbidden": e.Forbidden,
    "plan_limit": e.PlanLimit,
    "own_stream": e.OwnStream,
    "not_found": e.NotFound,
    "device_not_found": e.DeviceNotFound,
    "method_not_allowed": e.MethodNotAllowed,
    "conflict": e.Conflict,
    "already_subscribed": e.AlreadySubscribed,
    "not_cancellable": e.NotCancellable,
    "not_editable": e.NotEditable,
    "revision_mismatch": e.RevisionMismatch,
    "idempotency_key_in_use": e.IdempotencyKeyInUse,
    "idempotency_key_reused": e.IdempotencyKeyReused,
    "payload_too_large": e.PayloadTooLarge,
    "rate_limited": e.RateLimited,
    "unavailable": e.Unavailable,
    "internal_error": e.ServerError,
}

# A code this client does not know (a newer server, a proxy) falls back by status.
BY_STATUS: dict[int, type[e.PushcoreError]] = {
    400: e.ValidationError,
    401: e.Unauthorized,
    403: e.Forbidden,
    404: e.NotFound,
    405: e.MethodNotAllowed,
    409: e.Conflict,
    412: e.RevisionMismatch,
    413: e.PayloadTooLarge,
    422: e.ValidationError,
    429: e.RateLimited,
}


def retry_after(response: httpx.Response) -> int | None:
    """The whole seconds of a Retry-After header, None when absent or not a number."""
    value = response.headers.get("retry-after", "")
    return int(value) if value.isdigit() else None


_DESCRIPTION = re.compile(r'error_description="([^"\\]*)"')


def challenge_hint(response: httpx.Response) -> str | None:
    """The ``error_description`` of a 401's WWW-Authenticate challenge (RFC 6750)."""
    match = re.search(
        r'error_description="([^"\\]*)"', response.headers.get("www-authenticate", "")
    )
    return match.group(1) if match else None


_UPPER = re.compile(r"(?<=[a-z0-9])([A-Z])")


def argument_name(field: str) -> str:
    """An API field path as the client's arguments name it: ``notifications[3].customDelay``
    becomes ``notifications[3].custom_delay``; the keys of ``metadata`` are the caller's
    and stay as they are."""
    parts = field.split(".")
    for i, part in enumerate(parts):
        parts[i] = _UPPER.sub(lambda m: "_" + m.group(1).lower(), part)
        if parts[i].split("[")[0] == "metadata":
            break
    return ".".join(parts)


def error_for(response: httpx.Response) -> e.PushcoreError:
    """The exception an error answer raises, carrying its status, code and message."""
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        body = {}
    message = str(body.get("error") or f"HTTP {response.status_code} {response.reason_phrase}")
    code = body.get("code")
    if response.status_code == 404 and (not body or message == e.NO_SUCH_ENDPOINT):
        # Not an unknown id but an unknown address: the base URL is wrong, so say
        # which URL was tried (a proxy's 404 page has no body of ours at all).
        request = response.request
        message = (
            f"Not found: {request.method} {request.url} is no endpoint of a pushcore server"
            " (is the server's base URL right?)"
        )
    cls = CODES.get(code) if isinstance(code, str) else None
    if cls is None:
        cls = (
            e.ServerError
            if response.is_server_error
            else BY_STATUS.get(response.status_code, e.PushcoreError)
        )
    error: e.PushcoreError
    if issubclass(cls, e.ValidationError):
        said = [
            e.FieldError(str(d.get("field", "")), str(d.get("message", "")))
            for d in body.get("details") or []
            if isinstance(d, dict)
        ]
        # The client's own words: its keyword arguments are the fields in snake_case.
        details = [e.FieldError(argument_name(d.field), d.message) for d in said]
        if message == e.ValidationError(said).message:
            message = e.ValidationError(details).message
        error = cls(details, message)
    elif issubclass(cls, (e.RateLimited, e.Unavailable)):
        error = cls(message, retry_after(response) or 1)
    elif issubclass(cls, e.Unauthorized):
        error = cls(message, hint=challenge_hint(response))
    else:
        error = cls(message)
    error.status = response.status_code
    if isinstance(code, str):
        error.code = code  # an unknown code is kept as the server said it
    return error
