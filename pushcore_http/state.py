"""What the app holds for its handlers: the services it was built with.

Below both the routes and the credential checks (auth.py), which read it.
"""

from __future__ import annotations

from starlette.requests import Request

from pushcore.services import Services


def services_of(request: Request) -> Services:
    """The services the app was built with."""
    services: Services = request.app.state.services
    return services
