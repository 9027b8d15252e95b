"""/api/keys: create, list and revoke API keys (JWT only: a key cannot manage keys)."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from pushcore.converter import ApiKeyCreatedView, ApiKeyView, DeletedView, structure_request
from pushcore.domain.inputs import NewApiKey
from pushcore_http.answers import answer, listing, removal
from pushcore_http.auth import USER, served
from pushcore_http.body import read_json
from pushcore_http.endpoints import Endpoints
from pushcore_http.routes import view_response

routes = Endpoints("API keys")


@routes.post(
    "/api/keys",
    "Create an API key",
    USER,
    answer(201, "The key, with its secret (shown this once).", ApiKeyCreatedView),
    body=NewApiKey,
)
async def create(request: Request) -> Response:
    """Create a key; the only response that ever carries the full key."""
    services, user = served(request)
    new = structure_request(NewApiKey, await read_json(request))
    created = await run_in_threadpool(services.keys.create, user.account_id, new)
    return view_response(ApiKeyCreatedView.of(created.key, created.secret), 201)


@routes.get(
    "/api/keys",
    "List API keys",
    USER,
    listing("keys", ApiKeyView),
    "Newest first, revoked keys included.",
)
async def list_keys(request: Request) -> Response:
    """The caller's keys, masked."""
    services, user = served(request)
    keys = await run_in_threadpool(services.keys.list, user.account_id)
    return view_response([ApiKeyView.of(k) for k in keys])


@routes.delete(
    "/api/keys/{key_id}",
    "Revoke an API key",
    USER,
    removal("key"),
    "Sets `isActive` to false; the key stays listed and is refused from then on. "
    "Revoking twice answers the same.",
)
async def revoke(request: Request) -> Response:
    """Revoke (idempotent)."""
    services, user = served(request)
    key = await run_in_threadpool(
        services.keys.revoke, user.account_id, request.path_params["key_id"]
    )
    return view_response(DeletedView.of(key.id))
