"""Reading request bodies: a size cap while streaming, then JSON."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request

from pushcore.domain.errors import FieldError, InvalidJson, PayloadTooLarge, ValidationError

MAX_BODY_BYTES = 64 * 1024


async def read_json(request: Request) -> Any:
    """The decoded JSON body; 413 past 64 KiB (without reading it all), 400 when not JSON."""
    too_large = PayloadTooLarge(f"Request body must be at most {MAX_BODY_BYTES} bytes")
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise too_large
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise too_large
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw.strip():
        raise InvalidJson("Request body must be a JSON object")
    try:
        body = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidJson(f"Malformed JSON: {exc}") from None
    # Valid JSON ("\u0000"), but nothing may hold it: PostgreSQL cannot store it.
    nul = sorted(_fields_with_nul(body, ""))
    if nul:
        raise ValidationError([FieldError(f, "must not contain the NUL character") for f in nul])
    return body


def _fields_with_nul(value: Any, field: str) -> set[str]:
    """The fields (``metadata.build``, ``scopes[1]``; top level: "body") whose strings hold NUL."""
    if isinstance(value, str):
        return {field or "body"} if "\x00" in value else set()
    found: set[str] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            inner = f"{field}.{key}" if field else key
            found |= {inner} if "\x00" in key else _fields_with_nul(item, inner)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found |= _fields_with_nul(item, f"{field}[{index}]")
    return found
