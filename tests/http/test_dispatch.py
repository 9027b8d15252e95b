"""Routes found by path (pushcore_http.dispatch) are the routes Starlette's router picks:
for every declared endpoint, every method, and paths no route takes."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.routing import Match
from starlette.testclient import TestClient

from pushcore import build_services, load_settings
from pushcore.services import Services
from pushcore_http import create_app
from pushcore_http.dispatch import IndexedRoutes

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    services = build_services(load_settings(env={}, data_dir=tmp_path))
    yield services
    services.close()


@pytest.fixture
def app(services: Services) -> Starlette:
    return create_app(services, run_engine=False)


def scope_of(method: str, path: str) -> dict[str, Any]:
    return {"type": "http", "method": method, "path": path, "root_path": "", "path_params": {}}


def router_pick(app: Starlette, method: str, path: str) -> Any:
    """The route Starlette's router hands ``method path`` to: the first full match,
    else the first partial one; None when it answers by itself (404, redirect)."""
    partial = None
    for route in app.routes:
        match, _ = route.matches(scope_of(method, path))
        if match is Match.FULL:
            return route
        if match is Match.PARTIAL and partial is None:
            partial = route
    return partial


def paths(app: Starlette) -> list[str]:
    declared = [re.sub(r"\{[^}]+\}", "x1", getattr(route, "path", "/")) for route in app.routes]
    odd = ["/nowhere", "/healthz/", "/api/", "/api/notifications/", "/app/some/page", "/"]
    return declared + odd


def test_every_request_goes_to_the_route_the_router_picks(app: Starlette) -> None:
    index = app.router.middleware_stack
    assert isinstance(index, IndexedRoutes)
    for path in paths(app):
        for method in METHODS:
            picked = index.pick(scope_of(method, path))
            if picked is not None:  # else the router itself decides
                assert picked[0] is router_pick(app, method, path), (method, path)


def test_every_declared_endpoint_is_found_without_trying_every_route(app: Starlette) -> None:
    index = app.router.middleware_stack
    assert isinstance(index, IndexedRoutes)
    for endpoint in app.state.endpoints:
        path = re.sub(r"\{[^}]+\}", "x1", endpoint.path)
        picked = index.pick(scope_of(endpoint.method, path))
        assert picked is not None, (endpoint.method, endpoint.path)
        assert picked[0] is router_pick(app, endpoint.method, path)
    assert "/healthz" in index.exact


def test_what_no_route_takes_is_answered_as_before(app: Starlette) -> None:
    with TestClient(app) as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        assert client.get("/nowhere").status_code == 404
        wrong = client.put("/api/notifications")
        assert wrong.status_code == 405
        assert wrong.headers["allow"] == "GET, HEAD, POST"
        assert wrong.json()["code"] == "method_not_allowed"
        slash = client.get("/healthz/", follow_redirects=False)
        assert slash.status_code == 307
        assert slash.headers["location"].endswith("/healthz")
        # The app's shell answers GET on any path under /app/, and nothing else there.
        assert client.get("/app/some/page").headers["content-type"].startswith("text/html")
        assert client.post("/app/some/page").status_code == 405
