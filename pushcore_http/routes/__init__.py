"""Routes by resource; each module exposes ``routes``."""

from __future__ import annotations

from collections.abc import Sequence

from starlette.responses import JSONResponse

from pushcore.converter import View, to_json
from pushcore_http.state import services_of as services_of  # routes read it from here


def view_response(data: View | Sequence[View], status_code: int = 200) -> JSONResponse:
    """A JSON response whose body is a view, or an array of views."""
    body = to_json(data) if isinstance(data, View) else [to_json(v) for v in data]
    return JSONResponse(body, status_code)
