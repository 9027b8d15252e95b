"""Reading request bodies: a size cap while streaming, then JSON."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request

from pushcore.domain.errors import InvalidJson, PayloadTooLarge

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
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidJson(f"Malformed JSON: {exc}") from None
