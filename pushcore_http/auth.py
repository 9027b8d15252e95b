"""The one place that resolves credentials and decides which kind each endpoint takes."""

from __future__ import annotations

import enum

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from pushcore.domain.codes import API_KEY_PREFIX
from pushcore.domain.errors import Unauthorized
from pushcore.domain.scopes import Scope
from pushcore.services import Principal, Services
from pushcore_http.idempotency import claim_key
from pushcore_http.ratelimit import limit_account

# What a caller who sent the wrong kind of credential should do instead.
KEY_GOES_IN_HEADER = "API keys (psk_...) go in the X-API-Key header, not Authorization: Bearer"
CREATE_A_KEY = (
    "Create an API key with your token (POST /api/keys, or pushctl keys create)"
    " and send it in the X-API-Key header"
)


class Accepts(enum.Enum):
    """Which credentials an endpoint takes (the spec's table, API.md's decisions)."""

    USER = "user"  # a JWT only
    KEY = "key"  # an API key only
    EITHER = "either"


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if header is None:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("Invalid token")
    if token.strip().startswith(API_KEY_PREFIX):
        raise Unauthorized("Invalid token", hint=KEY_GOES_IN_HEADER)
    return token.strip()


async def _key(services: Services, key: str) -> Principal:
    # From the cache on the loop when it can answer: no thread hop for most requests.
    cached = services.auth.cached_key(key)
    if cached is not None:
        return cached
    return await run_in_threadpool(services.auth.authenticate_key, key)


async def authenticate(
    request: Request, services: Services, accepts: Accepts, scope: Scope | None = None
) -> Principal:
    """The caller of ``request``; 401 with API.md's message when it may not call."""
    key = request.headers.get("x-api-key")
    token = _bearer(request)
    principal: Principal
    if accepts is Accepts.USER:
        if token is None:
            if key is not None:
                raise Unauthorized("This endpoint requires a user token")
            raise Unauthorized("Authentication required")
        principal = await run_in_threadpool(services.auth.authenticate_token, token)
    elif accepts is Accepts.KEY:
        if key is None:
            if token is not None:
                raise Unauthorized("This endpoint requires an API key", hint=CREATE_A_KEY)
            raise Unauthorized("Authentication required")
        principal = await _key(services, key)
    elif key is not None:
        principal = await _key(services, key)
    elif token is not None:
        principal = await run_in_threadpool(services.auth.authenticate_token, token)
    else:
        raise Unauthorized("Authentication required")
    limit_account(request, principal)
    if scope is not None:
        principal.require(scope)
    # Every POST under /api/ authenticates here first: one place claims its key.
    await claim_key(request, services, principal)
    return principal
