"""/api/keys: create, list and revoke API keys (JWT only: a key cannot manage keys)."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.endpoints import HTTPEndpoint
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from pushcore.converter import ApiKeyCreatedView, ApiKeyView, DeletedView, structure_request
from pushcore.domain.inputs import NewApiKey
from pushcore_http.auth import Accepts, authenticated, caller_of
from pushcore_http.body import read_json
from pushcore_http.routes import services_of, view_response


class Keys(HTTPEndpoint):
    """/api/keys"""

    @authenticated(Accepts.USER)
    async def post(self, request: Request) -> Response:
        """Create a key; the only response that ever carries the full key."""
        services = services_of(request)
        user = caller_of(request)
        new = structure_request(NewApiKey, await read_json(request))
        created = await run_in_threadpool(services.keys.create, user.account_id, new)
        return view_response(ApiKeyCreatedView.of(created.key, created.secret), 201)

    @authenticated(Accepts.USER)
    async def get(self, request: Request) -> Response:
        """The caller's keys, masked."""
        services = services_of(request)
        user = caller_of(request)
        keys = await run_in_threadpool(services.keys.list, user.account_id)
        return view_response([ApiKeyView.of(k) for k in keys])


class Key(HTTPEndpoint):
    """/api/keys/:id"""

    @authenticated(Accepts.USER)
    async def delete(self, request: Request) -> Response:
        """Revoke (idempotent)."""
        services = services_of(request)
        user = caller_of(request)
        key_id = request.path_params["key_id"]
        key = await run_in_threadpool(services.keys.revoke, user.account_id, key_id)
        return view_response(DeletedView.of(key.id))


routes = [Route("/api/keys", Keys), Route("/api/keys/{key_id}", Key)]
