"""JSON answers rendered by orjson.

Starlette's JSONResponse renders with ``json.dumps`` and arguments of its own, so
every answer builds a fresh encoder: 2.4 µs for a create's answer on the benchmark
machine, against 0.11 µs with orjson (0.88 against 0.05 µs an item of a batch's
answer; docs/benchmarks.md, "Another machine; the floor again; JSON in and out").
The bytes are the same (no spaces, UTF-8 as it is) for all that the API answers:
strings, integers, booleans and null, in objects and arrays. What orjson refuses
and json.dumps takes (an integer past 64 bits) is left to json.dumps, with
Starlette's arguments. No answer holds a float (no view or error has a float
field): orjson would spell one otherwise at times (1e-7 for 1e-07, the same
number), and write NaN as null where json.dumps refuses it.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
from starlette import responses

# Keys that are not strings (an int, an enum) are written as json.dumps writes them.
_OPTIONS = orjson.OPT_NON_STR_KEYS


def render_json(content: Any) -> bytes:
    """``content`` as compact UTF-8 JSON, the bytes ``json.dumps`` would give."""
    try:
        return orjson.dumps(content, option=_OPTIONS)
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(
            content, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")
        ).encode("utf-8")


class JSONResponse(responses.JSONResponse):
    """Starlette's JSONResponse, rendered by :func:`render_json`."""

    def render(self, content: Any) -> bytes:
        return render_json(content)
