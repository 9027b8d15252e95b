"""The route table and /openapi.json are made from the same declarations: every declared
endpoint is routed (and not shadowed by another path), every route is declared, and the
document lists exactly the declared endpoints with the security their credential says."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Match

from pushcore import build_services, load_settings
from pushcore.domain.scopes import Scope
from pushcore.services import Services
from pushcore_http import app as app_module
from pushcore_http import create_app
from pushcore_http.answers import answer
from pushcore_http.auth import PUBLIC, USER, Accepts, key
from pushcore_http.endpoints import Endpoint, Endpoints, PathRoute, route_table
from pushcore_http.layers import Authenticated
from pushcore_http.openapi import document_of

Json = dict[str, Any]
# What each credential is said as in the document's security requirement.
SECURITY = {
    None: set(),
    Accepts.USER: {"bearerAuth"},
    Accepts.KEY: {"apiKeyAuth"},
    Accepts.EITHER: {"bearerAuth", "apiKeyAuth"},
}


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    services = build_services(load_settings(env={}, data_dir=tmp_path))
    yield services
    services.close()


@pytest.fixture
def app(services: Services) -> Starlette:
    return create_app(services, run_engine=False)


def concrete(path: str) -> str:
    """A URL the path template matches (a parameter filled with a plain word)."""
    return re.sub(r"\{[^}]+\}", "x1", path)


def picked(app: Starlette, method: str, url: str) -> Any:
    """The route Starlette's router gives ``method url`` (a full match first)."""
    scope = {"type": "http", "method": method, "path": url, "root_path": "", "path_params": {}}
    matches = [(route, route.matches(scope)[0]) for route in app.routes]
    full = [route for route, match in matches if match is Match.FULL]
    return full[0] if full else None


def test_every_declared_endpoint_is_routed_to_its_own_handler(app: Starlette) -> None:
    for endpoint in app_module.ENDPOINTS:
        route = picked(app, endpoint.method, concrete(endpoint.path))
        where = f"{endpoint.method} {endpoint.path}"
        assert isinstance(route, PathRoute), where
        assert route.path == endpoint.path, f"{where} is shadowed by {route.path}"
        assert route.endpoints[endpoint.method] is endpoint, where


def test_every_route_is_a_declared_endpoint_behind_the_layer_it_declares(
    app: Starlette,
) -> None:
    declared = {(e.method, e.path): e for e in app_module.ENDPOINTS}
    routed = set()
    for route in app.routes:
        assert isinstance(route, PathRoute), route
        for method, endpoint in route.endpoints.items():
            assert declared[method, route.path] is endpoint
            routed.add((method, route.path))
            served = route.methods_app.apps[method]
            if endpoint.credential.accepts is None:
                assert not isinstance(served, Authenticated), (method, route.path)
            else:
                assert isinstance(served, Authenticated), (method, route.path)
                assert served.declared is endpoint.credential
        # HEAD is the GET's, layer and all.
        if "GET" in route.endpoints:
            assert route.methods_app.apps["HEAD"] is route.methods_app.apps["GET"]
    assert routed == set(declared)


def test_the_document_lists_exactly_the_declared_api_endpoints_and_their_security(
    app: Starlette,
) -> None:
    document = app_module.openapi_document()
    documented = {
        (method.upper(), path): {name for need in op["security"] for name in need}
        for path, item in document["paths"].items()
        for method, op in item.items()
    }
    listed = {
        (e.method, e.path): SECURITY[e.credential.accepts]
        for e in app_module.ENDPOINTS
        if e.tag is not None
    }
    assert documented == listed
    # What the document leaves out is the people's app, never an API endpoint.
    hidden = {e.path for e in app_module.ENDPOINTS if e.tag is None}
    assert all(p == "/" or p.startswith("/app") for p in hidden), hidden
    for e in app_module.ENDPOINTS:
        if e.tag is None:
            continue
        op = document["paths"][e.path][e.method.lower()]
        needs = {name: scopes for need in op["security"] for name, scopes in need.items()}
        if e.credential.scope is not None:
            assert needs["apiKeyAuth"] == [e.credential.scope.value], e.path
        # The Idempotency-Key header exactly where the layer claims it.
        keyed = e.method == "POST" and e.credential.accepts is not None
        keyed = keyed and e.credential.idempotent
        header = {"$ref": "#/components/parameters/Idempotency-Key"}
        assert (header in op.get("parameters", [])) is keyed, (e.method, e.path)


def test_a_fixed_path_comes_before_a_parameter_whatever_the_declaration_order(
    services: Services,
) -> None:
    routes = Endpoints("Streams")

    async def named(request: Request) -> Response:
        return JSONResponse({"path": request.url.path})

    routes.delete("/api/things/{thing_id}", "Delete", PUBLIC)(named)
    routes.post("/api/things/special", "Special", PUBLIC)(named)
    table = route_table(routes, services, None)
    assert [r.path for r in table] == ["/api/things/special", "/api/things/{thing_id}"]


def test_a_method_declared_twice_on_a_path_stops_the_build(services: Services) -> None:
    routes = Endpoints("Streams")

    async def handler(request: Request) -> Response:
        return JSONResponse({})

    routes.get("/api/things", "One", USER)(handler)
    routes.get("/api/things", "Two", key(Scope.DEVICES_READ))(handler)
    with pytest.raises(ValueError, match="GET /api/things is declared twice"):
        route_table(routes, services, None)


def test_an_endpoint_cannot_be_declared_without_its_credential() -> None:
    routes = Endpoints("Streams")
    with pytest.raises(TypeError):
        routes.get("/api/things", "Things")  # type: ignore[call-arg]


def test_a_new_declaration_is_served_and_documented_from_that_alone(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    from starlette.testclient import TestClient

    from tests.conftest import Api

    routes = Endpoints("Devices")

    @routes.post("/api/things", "Make a thing", key(Scope.DEVICES_WRITE), answer(201, "Made.", {}))
    async def make(request: Request) -> Response:
        return JSONResponse({"made": True}, 201)

    (scratch,) = routes
    assert isinstance(scratch, Endpoint)
    monkeypatch.setattr(app_module, "ENDPOINTS", (*app_module.ENDPOINTS, scratch))
    with TestClient(create_app(services, run_engine=False)) as client:
        api = Api(client, services)
        assert client.post("/api/things").status_code == 401
        reader = client.post("/api/things", headers=api.key("alice", "devices:read"))
        assert reader.json()["error"] == "API key missing required scope: devices:write"
        keyed = {**api.key("alice", "devices:write"), "Idempotency-Key": "k"}
        first = client.post("/api/things", json={}, headers=keyed)
        again = client.post("/api/things", json={}, headers=keyed)
        document = client.get("/openapi.json").json()
    assert (first.status_code, first.json()) == (201, {"made": True})
    assert again.headers["idempotent-replayed"] == "true"
    op = document["paths"]["/api/things"]["post"]
    assert op["security"] == [{"apiKeyAuth": ["devices:write"]}]
    assert {"201", "401", "409", "422", "429"} <= set(op["responses"])


def test_the_worked_example_of_docs_architecture_is_what_the_code_takes(
    services: Services,
) -> None:
    text = (Path(__file__).parents[2] / "docs" / "architecture.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.DOTALL)
    (example,) = [b for b in blocks if "Endpoints(" in b]
    namespace: dict[str, Any] = {}
    exec(textwrap.dedent(example), namespace)  # noqa: S102 - our own docs
    (endpoint,) = namespace["routes"]
    (route,) = route_table([endpoint], services, None)
    assert isinstance(route.methods_app.apps["GET"], Authenticated)
    document = document_of([endpoint])
    op = document["paths"]["/api/devices/{device_id}"]["get"]
    assert op["security"] == [{"bearerAuth": []}, {"apiKeyAuth": ["devices:read"]}]
    assert set(op["responses"]) == {"200", "401", "404", "429", "503"}
    assert op["parameters"][0]["name"] == "device_id"
