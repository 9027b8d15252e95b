"""Routes by resource; each module exposes ``routes``."""

from __future__ import annotations

from starlette.requests import Request

from pushcore.services import Services


def services_of(request: Request) -> Services:
    """The services the app was built with."""
    services: Services = request.app.state.services
    return services
