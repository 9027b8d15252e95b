"""The route layer: every endpoint under /api/ declares its credential, and gets the
account's rate limit and (a POST) Idempotency-Key from that declaration alone."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import throttled.utils
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.testclient import TestClient

from pushcore import build_services, load_settings
from pushcore.converter import structure_request
from pushcore.domain.inputs import NewApiKey
from pushcore.domain.scopes import ALL_SCOPES
from pushcore.services import Services
from pushcore_http import app as app_module
from pushcore_http import create_app
from pushcore_http.auth import PUBLIC as NO_CREDENTIAL
from pushcore_http.auth import Accepts, Declared, caller_of
from pushcore_http.endpoints import Endpoints, PathRoute
from pushcore_http.layers import Authenticated
from tests.conftest import Api

# The endpoints under /api/ that take no credential (no account, so no account's rate
# limit and no Idempotency-Key): each one a decision, listed here on purpose.
PUBLIC = {
    ("GET", "/api/webpush/vapid-public-key"),
    ("HEAD", "/api/webpush/vapid-public-key"),
    # Sign-in: no account yet; limited by pushcore_http/signin_limits.py instead.
    ("GET", "/api/auth/methods"),
    ("HEAD", "/api/auth/methods"),
    ("POST", "/api/auth/login"),
    ("POST", "/api/auth/refresh"),
    ("POST", "/api/auth/logout"),
    ("POST", "/api/auth/signup"),
    # Single sign-on: the provider's round trip and the one-time code's exchange.
    ("GET", "/api/auth/oidc/start"),
    ("HEAD", "/api/auth/oidc/start"),
    ("GET", "/api/auth/oidc/callback"),
    ("HEAD", "/api/auth/oidc/callback"),
    ("POST", "/api/auth/oidc/exchange"),
    # A receipt: the token in the delivery's payload is the proof; limited per address.
    ("POST", "/api/receipts"),
}
# POSTs with an account whose answers are not kept for replay: a password change
# (nothing to replay, and its body, which holds passwords, is not to be hashed and kept).
UNKEYED = {("POST", "/api/auth/password"), ("POST", "/api/auth/oidc/link")}


def declarations(app: Starlette) -> Iterator[tuple[str, str, PathRoute, Declared]]:
    """(method, path, route, declared credential) for every method of every route under
    /api/, HEAD (answered by GET) included."""
    for route in app.routes:
        assert isinstance(route, PathRoute)
        if not route.path.startswith("/api/"):
            continue
        for method, endpoint in route.endpoints.items():
            yield method, route.path, route, endpoint.credential
            if method == "GET":
                yield "HEAD", route.path, route, endpoint.credential


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    services = build_services(load_settings(env={}, data_dir=tmp_path))
    yield services
    services.close()


def test_every_endpoint_under_api_is_behind_the_layer_or_declared_public(
    services: Services,
) -> None:
    app = create_app(services, run_engine=False)
    # The buckets of the RateLimit middleware (the one given them).
    buckets = next(m.kwargs["limits"] for m in app.user_middleware if "limits" in m.kwargs)
    assert buckets is not None
    public, unkeyed, posts = set(), set(), set()
    for method, path, route, declared in declarations(app):
        served = route.methods_app.apps[method]
        if declared.accepts is None:
            assert not isinstance(served, Authenticated), path
            public.add((method, path))
            continue
        # Authenticated, then charged to the account's bucket: the middleware's own.
        assert isinstance(served, Authenticated)
        assert served.limits is buckets, path
        if method == "POST":
            posts.add(path)
            if not declared.idempotent:
                unkeyed.add((method, path))
    assert public == PUBLIC
    assert unkeyed == UNKEYED
    assert len(posts) >= 7


def test_each_app_gets_layers_of_its_own(services: Services) -> None:
    layers = []
    for app in [create_app(services, run_engine=False) for _ in range(2)]:
        routes = [r for r in app.routes if isinstance(r, PathRoute)]
        assert len(routes) == len(app.routes)
        apps = [a for r in routes for a in r.methods_app.apps.values()]
        layers.append([a for a in apps if isinstance(a, Authenticated)])
    assert layers[0]
    assert not {id(a) for a in layers[0]} & {id(a) for a in layers[1]}
    # One layer each, in front of the endpoint's own handler (not of another layer).
    assert all(inspect.iscoroutinefunction(layer.handler) for layer in layers[0] + layers[1])


def test_a_public_endpoint_reads_no_caller(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    routes = Endpoints("People")

    @routes.post("/api/auth/thing", "A thing", NO_CREDENTIAL)
    async def sign_in(request: Request) -> Response:
        caller_of(request)
        return JSONResponse({})

    monkeypatch.setattr(app_module, "ENDPOINTS", (*app_module.ENDPOINTS, *routes))
    app = create_app(services, run_engine=False)
    with TestClient(app) as client, pytest.raises(RuntimeError, match="no authenticated caller"):
        client.post("/api/auth/thing", headers={"Idempotency-Key": "k"})


# -- behaviour on every route ------------------------------------------------------------


def post_samples(api: Api) -> dict[str, tuple[str, dict[str, str], dict[str, Any]]]:
    """A request that succeeds for each POST route template: (path, headers, body)."""
    alice = api.key("alice")
    bob = api.token("bob")
    stream = api.client.post("/api/streams", json={"name": "News"}, headers=alice).json()
    notification = {"title": "Hello"}
    hook = {"url": "https://93.184.215.14/hook", "events": ["*"]}
    user = api.token("alice")  # the key above has no webhooks:write
    endpoint = api.client.post("/api/webhooks", json=hook, headers=user).json()
    sent = api.client.post("/api/notifications", json=notification, headers=alice).json()
    original = api.client.post("/api/notifications", json=notification, headers=alice).json()
    schedule = {"name": "Daily", "rrule": "FREQ=DAILY", "template": notification}
    made = api.client.post("/api/schedules", json=schedule, headers=alice).json()
    one = f"/api/schedules/{made['id']}"
    return {
        "/api/schedules": ("/api/schedules", alice, schedule),
        **{
            f"/api/schedules/{{schedule_id}}/{action}": (f"{one}/{action}", alice, {})
            for action in ("pause", "resume", "trigger")
        },
        "/api/keys": ("/api/keys", api.token("alice"), {"name": "ci", "scopes": ["devices:read"]}),
        "/api/devices": ("/api/devices", alice, {"platform": "ios", "token": "a1" * 32}),
        "/api/notifications": ("/api/notifications", alice, notification),
        "/api/notifications/batch": (
            "/api/notifications/batch",
            alice,
            {"notifications": [notification]},
        ),
        "/api/streams": ("/api/streams", alice, {"name": "Releases"}),
        "/api/streams/subscribe": ("/api/streams/subscribe", bob, {"code": stream["code"]}),
        "/api/streams/{stream_id}/send": (
            f"/api/streams/{stream['id']}/send",
            alice,
            notification,
        ),
        "/api/webhooks": ("/api/webhooks", user, hook),
        "/api/webhooks/{webhook_id}/rotate-secret": (
            f"/api/webhooks/{endpoint['id']}/rotate-secret",
            user,
            {},
        ),
        "/api/webhooks/{webhook_id}/test": (f"/api/webhooks/{endpoint['id']}/test", user, {}),
        "/api/notifications/{notification_id}/replace": (
            f"/api/notifications/{original['id']}/replace",
            alice,
            {"body": "again"},
        ),
        "/api/notifications/{notification_id}/withdraw": (
            f"/api/notifications/{sent['id']}/withdraw",
            alice,
            {},
        ),
        # An entry id of nobody's: passed over, the unread count answered.
        "/api/inbox/read": (
            "/api/inbox/read",
            bob,
            {"ids": ["inb_00000000000000000000000000000001"]},
        ),
    }


def test_a_replayed_key_on_every_post_route_gets_the_kept_answer(api: Api) -> None:
    samples = post_samples(api)
    app = api.client.app
    assert isinstance(app, Starlette)
    posts = {
        path
        for method, path, _, c in declarations(app)
        if method == "POST" and c.accepts and c.idempotent
    }
    assert posts == set(samples), "a new POST route needs a sample here"
    for template, (path, headers, body) in samples.items():
        keyed = {**headers, "Idempotency-Key": f"k-{template}"}
        first = api.client.post(path, json=body, headers=keyed)
        again = api.client.post(path, json=body, headers=keyed)
        assert first.status_code in (200, 201, 202), (template, first.text)
        assert "idempotent-replayed" not in first.headers, template
        assert (again.status_code, again.content) == (first.status_code, first.content), template
        assert again.headers["idempotent-replayed"] == "true", template
        other = api.client.post(path, json={**body, "extra": 1}, headers=keyed)
        assert other.status_code == 422, template


@pytest.fixture
def limited(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Api]:
    """An app allowing one request a second per account, bursts of 2, on still time."""
    monkeypatch.setattr(throttled.utils, "now_mono_f", lambda: 1_000_000.0)
    settings = load_settings(env={}, data_dir=tmp_path, rate_limit=1, rate_limit_burst=2)
    services = build_services(settings)
    with TestClient(create_app(services, run_engine=False)) as client:
        yield Api(client, services)
    services.close()


def test_an_account_over_its_limit_gets_429_on_every_authenticated_endpoint(
    limited: Api,
) -> None:
    services = limited.services
    all_scopes = [str(scope) for scope in ALL_SCOPES]
    fresh = iter(range(1, 1000))

    def credential(accepts: Accepts) -> dict[str, str]:
        # A credential never seen before, so that no early refusal answers for the layer.
        if accepts is Accepts.USER:
            token = services.tokens.issue("alice", timedelta(hours=1, seconds=next(fresh)))
            return {"Authorization": f"Bearer {token}"}
        new = structure_request(NewApiKey, {"name": "fresh", "scopes": all_scopes})
        return {"X-API-Key": services.keys.create("alice", new).secret}

    user = credential(Accepts.USER)
    spent = [limited.client.get("/api/keys", headers=user).status_code for _ in range(2)]
    assert spent == [200, 200]  # the whole burst: every request now finds the bucket empty
    app = limited.client.app
    assert isinstance(app, Starlette)
    checked = set()
    for method, path, _, declared in declarations(app):
        if declared.accepts is None:
            continue
        kinds = [Accepts.USER, Accepts.KEY] if declared.accepts is Accepts.EITHER else []
        for kind in kinds or [declared.accepts]:
            url = path.replace("{", "x").replace("}", "")
            answer = limited.client.request(method, url, headers=credential(kind))
            assert answer.status_code == 429, (method, path, kind, answer.text)
            if method != "HEAD":
                assert answer.json()["code"] == "rate_limited"
            assert int(answer.headers["Retry-After"]) >= 1
            checked.add((method, kind))
    assert {kind for _, kind in checked} == {Accepts.USER, Accepts.KEY}
    assert {"GET", "HEAD", "POST", "DELETE"} <= {method for method, _ in checked}
