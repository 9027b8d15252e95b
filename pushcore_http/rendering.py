"""JSON answers rendered by orjson.

Starlette's JSONResponse renders with ``json.dumps`` and arguments of its own, so
every answer builds a fresh encoder: 2.4 µs for a create's answer on the benchmark
machine, against 0.11 µs with orjson (0.88 against 0.05 µs an item of a batch's
answer; docs/benchmarks.md, "JSON in and out"). The bytes are the same (no spaces,
UTF-8 as it is) for all that the API answers: strings, integers, booleans, null. A
float could be spelled otherwise (1e-7 for 1e-07), the same number. What orjson
refuses and json.dumps takes (an integer past 64 bits), or takes and json.dumps
refuses (NaN, which it writes as null), is left to json.dumps with Starlette's
arguments, so that no answer changes.
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson
from starlette import responses

# Keys that are not strings (an int, an enum) are written as json.dumps writes them.
_OPTIONS = orjson.OPT_NON_STR_KEYS


def render_json(content: Any) -> bytes:
    """``content`` as compact UTF-8 JSON, the bytes ``json.dumps`` would give."""
    try:
        rendered = orjson.dumps(content, option=_OPTIONS)
    except (orjson.JSONEncodeError, TypeError):
        return _standard(content)
    # orjson writes NaN and the infinities as null where json.dumps (allow_nan=False)
    # refuses them: found only where a float could be, which no view of ours holds.
    if b"null" in rendered and _has_odd_float(content):
        return _standard(content)
    return rendered


def _standard(content: Any) -> bytes:
    return json.dumps(
        content, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")
    ).encode("utf-8")


def _has_odd_float(content: Any) -> bool:
    stack = [content]
    while stack:
        value = stack.pop()
        if isinstance(value, float):
            if not math.isfinite(value):
                return True
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list | tuple):
            stack.extend(value)
    return False


class JSONResponse(responses.JSONResponse):
    """Starlette's JSONResponse, rendered by :func:`render_json`."""

    def render(self, content: Any) -> bytes:
        return render_json(content)
