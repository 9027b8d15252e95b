"""Which credential an endpoint takes, and how it is resolved.

An endpoint's declaration (:mod:`pushcore_http.endpoints`) names its credential as one of
the values below: ``USER``, ``key(Scope.NOTIFICATIONS_WRITE)``, ``either(...)`` or
``PUBLIC``. The route layer (:mod:`pushcore_http.layers`) enforces that value, and the
OpenAPI document's security requirement is made from it, so the two cannot disagree;
the endpoint reads its caller with :func:`caller_of`.
"""

from __future__ import annotations

import enum

import attrs
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.requests import Request

from pushcore.domain.codes import API_KEY_PREFIX
from pushcore.domain.errors import Unauthorized
from pushcore.domain.scopes import Scope
from pushcore.services import Principal, Services
from pushcore_http.state import services_of

# What a caller who sent the wrong kind of credential should do instead.
KEY_GOES_IN_HEADER = "an API key goes in the X-API-Key header, not Authorization: Bearer"
CREATE_A_KEY = (
    "Create an API key with your token (POST /api/keys, or pushctl keys create)"
    " and send it in the X-API-Key header"
)

PRINCIPAL = "pushcore.principal"
"""The scope key under which the route layer leaves the authenticated caller."""


class Accepts(enum.Enum):
    """Which credentials an endpoint takes (the spec's table, API.md's decisions)."""

    USER = "user"  # a JWT only
    KEY = "key"  # an API key only
    EITHER = "either"


@attrs.frozen
class Declared:
    """What an endpoint declared: the credential it takes (None: none, a public
    endpoint), the scope an API key needs, and whether a POST honours
    Idempotency-Key (every POST with an account does, unless declared otherwise)."""

    accepts: Accepts | None
    scope: Scope | None = None
    idempotent: bool = True
    # A request with no credential at all is let through without a caller, for the
    # endpoint to answer what anyone may see (with limits of its own).
    optional: bool = False


PUBLIC = Declared(None, idempotent=False)
"""No credential: no account, so no account's rate limit and no Idempotency-Key (an
endpoint that needs its own limits applies them)."""
USER = Declared(Accepts.USER)
"""A user's JWT only (scopes do not apply to it)."""
USER_OR_NONE = Declared(Accepts.USER, idempotent=False, optional=True)
"""A user's JWT, or no credential at all (the endpoint reads :func:`caller_or_none`);
a credential that is sent is checked as for ``USER``."""


def user(*, idempotent: bool = True) -> Declared:
    """A user's JWT; ``idempotent=False`` keeps a POST's answers from being stored for
    replay (under ``/api/auth/``, where nothing is idempotency-keyed)."""
    return Declared(Accepts.USER, idempotent=idempotent)


def key(scope: Scope) -> Declared:
    """An API key with ``scope`` only."""
    return Declared(Accepts.KEY, scope)


def either(scope: Scope) -> Declared:
    """A user's JWT, or an API key with ``scope``."""
    return Declared(Accepts.EITHER, scope)


def served(request: Request) -> tuple[Services, Principal]:
    """The services and the caller of an authenticated request: every handler's start."""
    return services_of(request), caller_of(request)


def caller_of(request: Request) -> Principal:
    """The caller the route layer authenticated for this request."""
    principal = request.scope.get(PRINCIPAL)
    if not isinstance(principal, Principal):
        # A programming error: the endpoint was declared public, or the app was
        # not built by create_app.
        raise RuntimeError("no authenticated caller: the endpoint declares no credential")
    return principal


def caller_or_none(request: Request) -> Principal | None:
    """The authenticated caller, or None when the request sent no credential (an
    endpoint declared ``USER_OR_NONE``)."""
    principal = request.scope.get(PRINCIPAL)
    return principal if isinstance(principal, Principal) else None


def sent_no_credential(headers: Headers) -> bool:
    """Whether the request carries neither a bearer token nor an API key."""
    return "authorization" not in headers and "x-api-key" not in headers


def _bearer(headers: Headers) -> str | None:
    header = headers.get("authorization")
    if header is None:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("Invalid token")
    if token.strip().startswith(API_KEY_PREFIX):
        # The hint also follows the pinned words, as API.md shows: curl's reader sees it.
        raise Unauthorized(f"Invalid token: {KEY_GOES_IN_HEADER}", hint=KEY_GOES_IN_HEADER)
    return token.strip()


async def _key(services: Services, key: str) -> Principal:
    # From the cache on the loop when it can answer: no thread hop for most requests.
    cached = services.auth.cached_key(key)
    if cached is not None:
        return cached
    return await run_in_threadpool(services.auth.authenticate_key, key)


async def authenticate(headers: Headers, services: Services, accepts: Accepts) -> Principal:
    """The caller sending ``headers``; 401 with API.md's message when it may not call."""
    key = headers.get("x-api-key")
    token = _bearer(headers)
    if accepts is Accepts.USER:
        if token is None:
            if key is not None:
                raise Unauthorized("This endpoint requires a user token")
            raise Unauthorized("Authentication required")
        return await run_in_threadpool(services.auth.authenticate_token, token)
    if accepts is Accepts.KEY:
        if key is None:
            if token is not None:
                raise Unauthorized("This endpoint requires an API key", hint=CREATE_A_KEY)
            raise Unauthorized("Authentication required")
        return await _key(services, key)
    if key is not None:
        return await _key(services, key)
    if token is not None:
        return await run_in_threadpool(services.auth.authenticate_token, token)
    raise Unauthorized("Authentication required")
