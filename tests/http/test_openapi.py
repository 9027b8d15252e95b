"""/openapi.json and /docs: the document is valid, complete, and true to the app."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate
from starlette.testclient import TestClient

from pushcore import build_services, load_settings
from pushcore.converter import camel
from pushcore.domain.inputs import (
    NewApiKey,
    NewDevice,
    NewNotification,
    NewStream,
    StreamSend,
    Subscribe,
)
from pushcore.domain.model import WebPushKeys
from pushcore.domain.people import PasswordChange, SessionRefresh, SignIn, SignUp
from pushcore_http import create_app
from pushcore_http.app import openapi_document
from tests.conftest import Api
from tests.fakes.icons import FakeIconProbe

VERBS = ("get", "post", "put", "patch", "delete")
Json = dict[str, Any]


@pytest.fixture(scope="module")
def document() -> Json:
    return openapi_document()


def operations(document: Json) -> Iterator[tuple[str, str, Json]]:
    """(method, path, operation) of every documented operation."""
    for path, item in document["paths"].items():
        for method, op in item.items():
            yield method, path, op


def check(document: Json, schema: Json, instance: Any) -> None:
    """Fail unless ``instance`` is valid against ``schema`` (refs into ``document``)."""
    rooted = {**schema, "components": document["components"]}
    errors = [e.message for e in Draft202012Validator(rooted).iter_errors(instance)]
    assert errors == [], f"{instance!r} does not match {schema}: {errors}"


# -- the document itself -------------------------------------------------------------


def test_openapi_json_is_served_without_credentials(client: TestClient) -> None:
    response = client.get("/openapi.json")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["openapi"] == "3.1.0"
    assert body == openapi_document()


def test_the_document_is_valid_openapi_3_1(document: Json) -> None:
    validate(document)


@pytest.mark.parametrize(
    ("schema", "cls"),
    [
        ("NewApiKey", NewApiKey),
        ("NewDevice", NewDevice),
        ("WebPushKeys", WebPushKeys),
        ("NewNotification", NewNotification),
        ("NewStream", NewStream),
        ("StreamSend", StreamSend),
        ("Subscribe", Subscribe),
        ("SignIn", SignIn),
        ("SignUp", SignUp),
        ("SessionRefresh", SessionRefresh),
        ("PasswordChange", PasswordChange),
    ],
)
def test_request_schemas_have_the_fields_the_api_takes(
    document: Json, schema: str, cls: type[Any]
) -> None:
    documented = document["components"]["schemas"][schema]
    fields = attrs.fields(cls)
    assert set(documented["properties"]) == {camel(f.name) for f in fields}
    required = {camel(f.name) for f in fields if f.default is attrs.NOTHING}
    assert set(documented["required"]) == required
    assert documented["additionalProperties"] is False  # unknown fields are refused


def test_every_example_matches_its_schema(document: Json) -> None:
    media: list[Json] = []
    for _, _, op in operations(document):
        if "requestBody" in op:
            media += op["requestBody"]["content"].values()
        for answer in op["responses"].values():
            media += answer.get("content", {}).values()
    for answer in document["components"]["responses"].values():
        media += answer["content"].values()
    examples = 0
    for m in media:
        values = [m["example"]] if "example" in m else []
        values += [e["value"] for e in m.get("examples", {}).values()]
        for value in values:
            check(document, m["schema"], value)
            examples += 1
    assert examples >= 15


# -- credentials: the document says what the app checks ------------------------------


@pytest.fixture
def app_api(tmp_path: Path) -> Iterator[Api]:
    """An API-only app (nothing is delivered) with icons that need no network, and no
    rate limits: the credential checks of every operation fail more than 50 times in a
    second, past the failed-authentication burst (tests/http/test_limits.py tests it)."""
    settings = load_settings(env={"PUSHCORE_RATE_LIMIT": "0"}, data_dir=tmp_path)
    services = build_services(settings, icons=FakeIconProbe())
    with TestClient(create_app(services, run_engine=False)) as client:
        yield Api(client, services)


def concrete(path: str) -> str:
    """``path`` with every parameter filled (credentials are checked before any lookup)."""
    return re.sub(r"\{[^}]+\}", "x", path)


ALL_SCOPES = ("notifications:read", "notifications:write", "devices:read", "devices:write")


def streams(op: Json) -> bool:
    """Whether an operation answers server-sent events (the live channel)."""
    return "text/event-stream" in op["responses"].get("200", {}).get("content", {})


def test_each_operation_takes_the_credentials_it_documents(app_api: Api, document: Json) -> None:
    jwt = app_api.token("alice")
    for method, path, op in operations(document):
        url = concrete(path)
        anonymous = app_api.client.request(method, url)
        schemes = {name: scopes for req in op["security"] for name, scopes in req.items()}
        where = f"{method.upper()} {path}"
        if not schemes:
            assert anonymous.status_code != 401, where
            continue
        if {} in op["security"]:
            # The credential may be left out; one that is sent is checked all the same.
            assert anonymous.status_code != 401, where
        else:
            assert anonymous.status_code == 401, where
            assert anonymous.json() == {"error": "Authentication required", "code": "unauthorized"}
        assert "401" in op["responses"], where
        if streams(op):
            # A channel that opens never ends by itself (tests/live follow it): only
            # the refusals are asked for here, and the accepted channel as a replay
            # from a malformed id, which is refused after authentication.
            url += "?since=inb_?"
        with_jwt = app_api.client.request(method, url, headers=jwt)
        if "bearerAuth" in schemes:
            assert with_jwt.status_code != 401, where
        else:
            assert with_jwt.json()["error"] == "This endpoint requires an API key", where
        if "apiKeyAuth" not in schemes:
            with_key = app_api.client.request(method, url, headers=app_api.key("alice"))
            assert with_key.json()["error"] == "This endpoint requires a user token", where
            continue
        (scope,) = schemes["apiKeyAuth"]
        others = app_api.key("alice", *(s for s in ALL_SCOPES if s != scope))
        lacking = app_api.client.request(method, url, headers=others)
        assert lacking.status_code == 401, where
        assert lacking.json()["error"] == f"API key missing required scope: {scope}", where
        allowed = app_api.client.request(method, url, headers=app_api.key("alice", scope))
        assert allowed.status_code != 401, where


# -- a tour: the examples are accepted, the answers are what the document says --------


def test_examples_are_accepted_and_every_answer_matches_the_document(
    app_api: Api, document: Json
) -> None:
    client = app_api.client
    who = {
        "alice": app_api.token("alice"),
        "alice-key": app_api.key("alice"),
        "bob": app_api.token("bob"),
    }
    ids: dict[str, str] = {}
    visited: set[tuple[str, str]] = set()

    def call(
        method: str, path: str, caller: str | None, status: int, body: Json | None = None
    ) -> Json:
        """Call ``path`` (parameters from ``ids``); when a documented operation takes a
        body and none is given, post its example. Check status and answer."""
        path, _, query = path.partition("?")
        op = document["paths"][path][method]
        visited.add((method, path))
        if body is None and "requestBody" in op:
            body = op["requestBody"]["content"]["application/json"]["example"]
        url = re.sub(r"\{([^}]+)\}", lambda m: ids[m.group(1)], path) + (query and f"?{query}")
        headers = who[caller] if caller else {}
        response = client.request(method, url, json=body, headers=headers)
        where = f"{method.upper()} {path}"
        assert response.status_code == status, f"{where}: {response.text}"
        answer = op["responses"].get(str(status))
        assert answer is not None, f"{where}: {status} is not documented"
        if "$ref" in answer:
            answer = document["components"]["responses"][answer["$ref"].rsplit("/", 1)[1]]
        media = answer["content"]
        content_type = response.headers["content-type"].split(";")[0]
        assert content_type in media, f"{where}: {content_type} is not documented"
        if content_type != "application/json":
            return {}
        found: Json = response.json()
        check(document, media[content_type]["schema"], found)
        return found

    ids["key_id"] = call("post", "/api/keys", "alice", 201)["id"]
    call("get", "/api/keys", "alice", 200)
    call("delete", "/api/keys/{key_id}", "alice", 200)

    ids["device_id"] = call("post", "/api/devices", "alice-key", 201)["id"]
    call("post", "/api/devices", "alice-key", 200)  # the same token again: an upsert
    call("get", "/api/devices", "alice-key", 200)

    ids["notification_id"] = call("post", "/api/notifications", "alice-key", 201)["id"]
    call("get", "/api/notifications", "alice-key", 200)
    call("get", "/api/notifications/stats", "alice-key", 200)
    call("get", "/api/notifications/{notification_id}", "alice-key", 200)
    call("get", "/api/notifications/{notification_id}/deliveries?limit=1", "alice-key", 200)
    call("get", "/api/notifications/{notification_id}/deliveries?status=x", "alice-key", 400)
    call("post", "/api/receipts", None, 404)  # the example is no token of this server
    call("post", "/api/receipts", None, 400, {"token": "rct_x", "event": "seen"})
    call("patch", "/api/notifications/{notification_id}", "alice-key", 200, {"title": "Edited"})
    call("delete", "/api/notifications/{notification_id}", "alice-key", 200)
    call("delete", "/api/notifications/{notification_id}", "alice-key", 409)
    call("patch", "/api/notifications/{notification_id}", "alice-key", 409, {"title": "Late"})
    call("post", "/api/notifications/{notification_id}/replace", "alice-key", 201, {"body": "New"})
    call("post", "/api/notifications/{notification_id}/withdraw", "alice-key", 200)
    call("post", "/api/notifications", "alice-key", 400, {"title": ""})
    call("post", "/api/notifications", "alice-key", 404, {"title": "t", "targetDeviceToken": "?"})
    call("post", "/api/notifications/batch", "alice-key", 201)
    call("post", "/api/notifications/batch", "alice-key", 400, {"notifications": [{}]})

    ids["schedule_id"] = call("post", "/api/schedules", "alice-key", 201)["id"]
    call("get", "/api/schedules", "alice-key", 200)
    call("get", "/api/schedules/{schedule_id}", "alice-key", 200)
    call("get", "/api/schedules/{schedule_id}/occurrences?limit=3", "alice-key", 200)
    call("patch", "/api/schedules/{schedule_id}", "alice-key", 200, {"name": "Renamed"})
    call("post", "/api/schedules/{schedule_id}/trigger", "alice-key", 200)
    call("post", "/api/schedules/{schedule_id}/pause", "alice-key", 200)
    call("post", "/api/schedules/{schedule_id}/resume", "alice-key", 200)
    call("post", "/api/schedules", "alice-key", 400, {"name": "n", "rrule": "FREQ=SECONDLY"})
    call("delete", "/api/schedules/{schedule_id}", "alice-key", 200)

    stream = call("post", "/api/streams", "alice-key", 201)
    ids["stream_id"], ids["code"] = stream["id"], stream["code"]
    call("get", "/api/streams", "alice-key", 200)
    # The documented code is an example of the form; subscribe to the real one.
    ids["subscription_id"] = call(
        "post", "/api/streams/subscribe", "bob", 201, {"code": stream["code"]}
    )["id"]
    call("post", "/api/streams/subscribe", "bob", 409, {"code": stream["code"]})
    call("post", "/api/streams/subscribe", "alice", 403, {"code": stream["code"]})
    call("get", "/api/streams/subscriptions", "bob", 200)
    call("patch", "/api/streams/subscriptions/{subscription_id}", "bob", 200)
    call("get", "/api/streams/lookup/{code}", "bob", 200)
    call("post", "/api/streams/{stream_id}/send", "alice-key", 201)
    call("delete", "/api/streams/subscriptions/{subscription_id}", "bob", 200)
    call("delete", "/api/streams/{stream_id}", "alice-key", 200)
    call("get", "/api/streams/lookup/{code}", "bob", 404)
    for name in ("Two", "Three", "Four"):
        call("post", "/api/streams", "alice-key", 201, {"name": name})
    call("post", "/api/streams", "alice-key", 403, {"name": "Fifth"})

    call("delete", "/api/devices/{device_id}", "alice-key", 200)
    call("delete", "/api/devices/{device_id}", "alice-key", 404)

    # The live channel itself is followed in tests/live; its refusal is documented.
    call("get", "/api/inbox", "alice", 200)
    call("post", "/api/inbox/read", "alice", 200)
    ids["entry_id"] = "inb_00000000000000000000000000000001"
    call("delete", "/api/inbox/{entry_id}", "alice", 404)
    call("get", "/api/inbox/events?since=nope", "alice", 400)
    # alice (made by her first token) gets the documented example's password.
    login = document["paths"]["/api/auth/login"]["post"]["requestBody"]["content"]
    app_api.services.people.set_password("alice", login["application/json"]["example"]["password"])
    call("get", "/api/auth/methods", None, 200)
    session = call("post", "/api/auth/login", None, 200)
    call("post", "/api/auth/login", None, 401, {"account": "nobody", "password": "whatever1"})
    call("post", "/api/auth/refresh", None, 401)
    fresh = call("post", "/api/auth/refresh", None, 200, {"refreshToken": session["refreshToken"]})
    call("post", "/api/auth/logout", None, 200, {"refreshToken": fresh["refreshToken"]})
    call("post", "/api/auth/signup", None, 403)
    call("get", "/api/account", "alice", 200)
    call("patch", "/api/account", "alice", 200)
    call("patch", "/api/account", "alice", 400, {"timeZone": "+02:00"})
    call("post", "/api/auth/password", "alice", 200)
    call("post", "/api/auth/password", "alice", 400)  # the example's current one is no more

    hook = {"url": "https://93.184.215.14/hook", "events": ["webhook.*"]}
    ids["webhook_id"] = call("post", "/api/webhooks", "alice", 201, hook)["id"]
    call("post", "/api/webhooks", "alice", 400, {"url": "http://10.0.0.1/", "events": ["*"]})
    call("get", "/api/webhooks", "alice", 200)
    call("get", "/api/webhooks/{webhook_id}", "alice", 200)
    call("patch", "/api/webhooks/{webhook_id}", "alice", 200, {"description": "Orders"})
    call("post", "/api/webhooks/{webhook_id}/rotate-secret", "alice", 200, {})
    call("post", "/api/webhooks/{webhook_id}/test", "alice", 202, {})
    call("get", "/api/webhooks/{webhook_id}/attempts", "alice", 200)
    call("get", "/api/events", "alice", 200)
    call("get", "/api/events?type=nope", "alice", 400)
    call("delete", "/api/webhooks/{webhook_id}", "alice", 200)
    call("get", "/api/webhooks/{webhook_id}", "alice", 404)

    call("get", "/healthz", None, 200)
    call("get", "/readyz", None, 200)
    call("get", "/api/webpush/vapid-public-key", None, 200)
    call("get", "/metrics", None, 200)
    call("get", "/openapi.json", None, 200)
    call("get", "/docs", None, 200)
    # Single sign-on is not configured here (tests/http/test_oidc.py takes it end to end).
    call("get", "/api/auth/oidc/start", None, 404)
    call("get", "/api/auth/oidc/callback", None, 404)
    call("post", "/api/auth/oidc/exchange", None, 404)
    call("post", "/api/auth/oidc/link", "alice", 404)

    documented = {(method, path) for method, path, _ in operations(document)}
    assert documented - visited == set(), "operations the tour does not exercise"


# -- /docs -------------------------------------------------------------------------


def test_docs_page_renders_the_document_without_any_outside_resource(
    client: TestClient,
) -> None:
    response = client.get("/docs")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    page = response.text
    assert 'fetch("openapi.json"' in page  # relative: works behind a path prefix too
    # Self-contained: nothing is loaded from elsewhere, so it works offline.
    assert "http://" not in page
    assert "https://" not in page
    assert "<script src" not in page


# The page's script, run by Node on the served document with just enough of a DOM: each
# element is {tag, attrs, text, children}; the test reads the tables it built.
_DOM = """
const [script, doc] = JSON.parse(require("fs").readFileSync(0, "utf8"));
function El(tag) {
  Object.assign(this, {tag, attrs: {}, textContent: "", children: [], style: {}});
}
El.prototype.appendChild = function (c) { this.children.push(c); return c; };
El.prototype.setAttribute = function (k, v) { this.attrs[k] = v; };
El.prototype.getAttribute = function (k) { return this.attrs[k]; };
El.prototype.addEventListener = function () {};
const byId = {};
globalThis.document = {
  createElement: (t) => new El(t),
  createTextNode: (t) => Object.assign(new El("#text"), {textContent: t}),
  getElementById: (id) => byId[id] || (byId[id] = new El("div")),
};
globalThis.location = {hash: ""};
globalThis.fetch = async () => ({ok: true, json: async () => doc});
const tree = (n) => ({tag: n.tag, id: n.attrs.id || "", text: String(n.textContent ?? ""),
                      children: n.children.map(tree)});
eval(script);
setTimeout(() => process.stdout.write(JSON.stringify(tree(byId.main))), 50);
"""


def rows(node: Json) -> Iterator[list[str]]:
    """The cells' text of every table row under ``node``."""
    if node["tag"] == "tr":
        yield ["".join(texts(cell)) for cell in node["children"]]
    for child in node["children"]:
        yield from rows(child)


def texts(node: Json) -> Iterator[str]:
    yield node["text"]
    for child in node["children"]:
        yield from texts(child)


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node to run the page's script")
def test_docs_page_names_every_parameter(client: TestClient) -> None:
    # A parameter given by reference (Idempotency-Key, on every POST) was a row without a
    # name, typed "any".
    (script,) = re.findall(r"<script>(.*?)</script>", client.get("/docs").text, re.DOTALL)
    document = client.get("/openapi.json").json()
    run = subprocess.run(
        ["node", "-e", _DOM],
        input=json.dumps([script, document]),
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    page = json.loads(run.stdout)
    posts = [
        section
        for section in page["children"]
        if section["id"].startswith("op-post-")
        and "auth" not in section["id"]
        and "receipts" not in section["id"]  # no credential, no Idempotency-Key
    ]
    assert len(posts) == 17  # with the webhooks' 3 and the schedules' 4
    for section in posts:
        # Name, in, type, description (the body's field tables have three columns).
        parameters = [r[:3] for r in rows(section) if len(r) == 4 and r[0] != "Name"]
        assert all(name and kind != "any" for name, _, kind in parameters), parameters
        assert ["Idempotency-Key", "header", "string"] in parameters


def test_docs_page_policy_lets_its_own_script_run_and_nothing_else(client: TestClient) -> None:
    response = client.get("/docs")
    policy = response.headers["content-security-policy"]
    (script,) = re.findall(r"<script>(.*?)</script>", response.text, re.DOTALL)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}';" in policy
    assert "default-src 'none'" in policy
    assert "connect-src 'self'" in policy
    assert "unsafe-inline" not in policy


# -- the rules the document states are the server's -----------------------------------


def schema_errors(document: Json, name: str, instance: Any) -> list[str]:
    rooted = {**document["components"]["schemas"][name], "components": document["components"]}
    return [e.message for e in Draft202012Validator(rooted).iter_errors(instance)]


@pytest.mark.parametrize(
    ("token", "accepted"),
    [
        ("a1" * 32, True),
        ("A1B2" * 8, True),
        ("a1" * 15, False),  # 30 hex digits: too short
        ("a" * 33, False),  # odd
        ("zz" * 16, False),  # not hex
        ("fcm-example-token-that-is-long-enough", False),
    ],
)
def test_the_documented_ios_token_is_what_the_server_takes(
    api: Api, document: Json, token: str, *, accepted: bool
) -> None:
    body = {"platform": "ios", "token": token}
    assert (schema_errors(document, "NewDevice", body) == []) is accepted
    response = api.client.post("/api/devices", json=body, headers=api.token("ios"))
    assert response.status_code == (201 if accepted else 400), response.text


def test_the_documented_cursor_is_what_the_server_makes_and_takes(api: Api, document: Json) -> None:
    key = api.key("cursor")
    for n in range(2):
        api.client.post("/api/notifications", json={"title": f"n{n}"}, headers=key)
    page = api.client.get("/api/notifications?limit=1", headers=key).json()
    assert schema_errors(document, "NotificationPage", page) == []
    (parameter,) = [
        p
        for p in document["paths"]["/api/notifications"]["get"]["parameters"]
        if p["name"] == "cursor"
    ]
    pattern = re.compile(parameter["schema"]["pattern"])
    assert pattern.fullmatch(page["nextCursor"])
    assert pattern.fullmatch(parameter["schema"]["examples"][0])
    for cursor in (page["nextCursor"][:-1], page["nextCursor"] + "A", "x" * 40):
        response = api.client.get(f"/api/notifications?cursor={cursor}", headers=key)
        assert response.status_code == 400
    assert api.client.get(f"/api/notifications?cursor={page['nextCursor']}", headers=key)


def expires_at_examples(node: Any, inside: bool = False) -> Iterator[str]:
    """Every timestamp in the document under an ``expiresAt`` member (schema or example)."""
    if isinstance(node, dict):
        for name, value in node.items():
            yield from expires_at_examples(value, inside or name == "expiresAt")
    elif isinstance(node, list):
        for value in node:
            yield from expires_at_examples(value, inside)
    elif inside and isinstance(node, str) and re.match(r"\d{4}-\d\d-\d\dT", node):
        yield node


def test_every_expires_at_example_is_in_the_future(api: Api, document: Json) -> None:
    now = datetime.now(UTC)
    found = list(expires_at_examples(document))
    assert len(found) >= 3  # the request and response schemas, an operation's example
    for example in found:
        assert datetime.fromisoformat(example) > now + timedelta(days=365), example
    # And the documented request, sent as it is, creates a key.
    op = document["paths"]["/api/keys"]["post"]
    body = op["requestBody"]["content"]["application/json"]["example"]
    response = api.client.post("/api/keys", json=body, headers=api.token("expiry"))
    assert response.status_code == 201, response.text
    assert response.json()["expiresAt"] == body["expiresAt"]


def test_every_refusal_the_front_door_can_make_is_documented(document: Json) -> None:
    # Rate limits apply to every authenticated operation; the body reader refuses
    # what is not JSON before any operation sees it.
    for method, path, op in operations(document):
        answers = op["responses"]
        if op["security"]:
            assert answers["429"] == {"$ref": "#/components/responses/RateLimited"}, (method, path)
        if "requestBody" in op:
            assert "415" in answers, (method, path)
    limited = document["components"]["responses"]["RateLimited"]
    assert "Retry-After" in limited["headers"]
