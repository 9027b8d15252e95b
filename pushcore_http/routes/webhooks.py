"""/api/webhooks (event webhook endpoints) and /api/events (the account's event log)."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from pushcore.converter import DeletedView, structure_request
from pushcore.converter.events import (
    AttemptPageView,
    EventIdView,
    EventPageView,
    SecretView,
    WebhookCreatedView,
    WebhookView,
)
from pushcore.domain import errors as e
from pushcore.domain.events import (
    EVENTS_PAGE_DEFAULT,
    EVENTS_PAGE_MAX,
    EventType,
    NewWebhook,
    WebhookChange,
)
from pushcore.domain.scopes import Scope
from pushcore_http.answers import answer, listing, query, refusal, removal, shared
from pushcore_http.auth import either, served
from pushcore_http.body import read_json
from pushcore_http.endpoints import Endpoints
from pushcore_http.routes import view_response

routes = Endpoints("Event webhooks")
events_routes = Endpoints("Events")
_READ, _WRITE = either(Scope.WEBHOOKS_READ), either(Scope.WEBHOOKS_WRITE)
_LIMIT = {"type": "integer", "minimum": 1, "maximum": EVENTS_PAGE_MAX}
_BAD_URL = refusal(
    e.ValidationError(
        [e.FieldError("url", "must not point at a private, loopback or link-local address")]
    ),
    "A malformed field, or a URL the SSRF guard refuses.",
)


def _limit(request: Request, default: int = EVENTS_PAGE_DEFAULT) -> int:
    raw = request.query_params.get("limit")
    if raw is None:
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= EVENTS_PAGE_MAX:
        raise e.ValidationError([e.FieldError("limit", f"must be 1 to {EVENTS_PAGE_MAX}")])
    return int(raw)


@routes.post(
    "/api/webhooks",
    "Create an event webhook endpoint",
    _WRITE,
    answer(201, "The endpoint, with its secret (shown this once).", WebhookCreatedView)
    | _BAD_URL
    | refusal(e.PlanLimit("The free plan allows 3 webhook endpoints; delete one")),
    "Events of the types (or prefixes, `delivery.*`) in `events` are POSTed to `url`, "
    "signed as Standard Webhooks. The free plan allows 3 endpoints, pro 25.",
    body=NewWebhook,
)
async def create(request: Request) -> Response:
    """Create an endpoint; the only answer that carries its secret."""
    services, caller = served(request)
    new = structure_request(NewWebhook, await read_json(request))
    made = await run_in_threadpool(services.webhooks.create, caller.account_id, new)
    return view_response(WebhookCreatedView.created(made.endpoint, made.secret), 201)


@routes.get(
    "/api/webhooks", "List event webhook endpoints", _READ, listing("endpoints", WebhookView)
)
async def list_all(request: Request) -> Response:
    """The caller's endpoints, oldest first (an array)."""
    services, caller = served(request)
    found = await run_in_threadpool(services.webhooks.list, caller.account_id)
    return view_response([WebhookView.of(w) for w in found])


@routes.get(
    "/api/webhooks/{webhook_id}",
    "Get an event webhook endpoint",
    _READ,
    answer(200, "The endpoint.", WebhookView),
)
async def get(request: Request) -> Response:
    """One endpoint."""
    services, caller = served(request)
    found = await run_in_threadpool(
        services.webhooks.get, caller.account_id, request.path_params["webhook_id"]
    )
    return view_response(WebhookView.of(found))


@routes.declare(
    "PATCH",
    "/api/webhooks/{webhook_id}",
    "Change an event webhook endpoint",
    _WRITE,
    answer(200, "The endpoint as it now is.", WebhookView) | _BAD_URL,
    "The fields given change. `enabled: true` enables an endpoint the service disabled "
    "and clears its `disabledReason`.",
    body=WebhookChange,
)
async def update(request: Request) -> Response:
    """Change the fields given."""
    services, caller = served(request)
    change = structure_request(WebhookChange, await read_json(request))
    changed = await run_in_threadpool(
        services.webhooks.update, caller.account_id, request.path_params["webhook_id"], change
    )
    return view_response(WebhookView.of(changed))


@routes.delete(
    "/api/webhooks/{webhook_id}", "Delete an event webhook endpoint", _WRITE, removal("endpoint")
)
async def delete(request: Request) -> Response:
    """Delete it and its attempts."""
    services, caller = served(request)
    webhook_id = request.path_params["webhook_id"]
    await run_in_threadpool(services.webhooks.delete, caller.account_id, webhook_id)
    return view_response(DeletedView.of(webhook_id))


@routes.post(
    "/api/webhooks/{webhook_id}/rotate-secret",
    "Rotate an endpoint's secret",
    _WRITE,
    answer(200, "The new secret (shown this once).", SecretView) | shared("400"),
    "The previous secret signs too for 24 hours: `webhook-signature` then carries both "
    "signatures, space-separated.",
)
async def rotate(request: Request) -> Response:
    """A new secret, the old one kept for 24 hours."""
    services, caller = served(request)
    secret = await run_in_threadpool(
        services.webhooks.rotate_secret, caller.account_id, request.path_params["webhook_id"]
    )
    return view_response(SecretView(secret))


@routes.post(
    "/api/webhooks/{webhook_id}/test",
    "Send a test event",
    _WRITE,
    answer(202, "Queued: a `webhook.test` event for this endpoint.", EventIdView) | shared("400"),
)
async def test(request: Request) -> Response:
    """Queue a ``webhook.test`` event to this endpoint alone."""
    services, caller = served(request)
    event_id = await run_in_threadpool(
        services.webhooks.test, caller.account_id, request.path_params["webhook_id"]
    )
    return view_response(EventIdView(event_id), 202)


@routes.get(
    "/api/webhooks/{webhook_id}/attempts",
    "List an endpoint's attempts",
    _READ,
    answer(200, "One page, newest event first.", AttemptPageView)
    | refusal(
        e.ValidationError([e.FieldError("limit", f"must be 1 to {EVENTS_PAGE_MAX}")]),
        "A bad limit.",
    ),
    "Each event sent (or to be sent) to the endpoint, with its latest try.",
    parameters=[
        query("limit", "Page size.", _LIMIT | {"default": EVENTS_PAGE_DEFAULT}),
        query("cursor", "The `nextCursor` of the previous page.", {"type": "string"}),
    ],
)
async def attempts(request: Request) -> Response:
    """The endpoint's attempts, a page at a time."""
    services, caller = served(request)
    page = await run_in_threadpool(
        services.webhooks.attempts,
        caller.account_id,
        request.path_params["webhook_id"],
        request.query_params.get("cursor") or None,
        _limit(request),
    )
    return view_response(AttemptPageView.of(page))


_TYPES = [t.value for t in EventType]


@events_routes.get(
    "/api/events",
    "List events",
    either(Scope.NOTIFICATIONS_READ),
    answer(200, "One page, oldest first.", EventPageView)
    | refusal(
        e.ValidationError([e.FieldError("type", "unknown event type: 'nope'")]),
        "An unknown type or a bad limit.",
    ),
    "The account's events, kept as long as its notifications (`PUSHCORE_RETENTION`), oldest "
    "first after the event id `after` (`nextCursor` is the last id of the page; `cursor` is "
    "taken as `after` too). `type` (repeatable or comma-separated) narrows them.",
    parameters=[
        query("type", "Only events of these types.", {"type": "string", "enum": _TYPES}),
        query("after", "An event id: the events after it.", {"type": "string"}),
        query("limit", "Page size.", _LIMIT | {"default": EVENTS_PAGE_DEFAULT}),
    ],
)
async def list_events(request: Request) -> Response:
    """Events oldest first, after ``after``."""
    services, caller = served(request)
    query_params = request.query_params
    types = [t for given in query_params.getlist("type") for t in given.split(",") if t]
    unknown = [t for t in types if t not in _TYPES]
    if unknown:
        raise e.ValidationError([e.FieldError("type", f"unknown event type: {unknown[0]!r}")])
    after = query_params.get("after") or query_params.get("cursor") or None
    page = await run_in_threadpool(
        services.webhooks.events, caller.account_id, after, types, _limit(request)
    )
    return view_response(EventPageView.of(page))
