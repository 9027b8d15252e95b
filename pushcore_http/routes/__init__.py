"""Routes by resource; each module exposes ``routes``."""

from __future__ import annotations

from collections.abc import Sequence

from starlette.requests import Request
from starlette.responses import JSONResponse

from pushcore.converter import View, to_json
from pushcore.services import Services


def services_of(request: Request) -> Services:
    """The services the app was built with."""
    services: Services = request.app.state.services
    return services


def view_response(data: View | Sequence[View], status_code: int = 200) -> JSONResponse:
    """A JSON response whose body is a view, or an array of views."""
    body = to_json(data) if isinstance(data, View) else [to_json(v) for v in data]
    return JSONResponse(body, status_code)
