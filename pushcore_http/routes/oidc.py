"""/api/auth/oidc/*: single sign-on with the OpenID provider of PUSHCORE_OIDC_*.

``start`` and ``callback`` are the browser's navigations: they answer with
redirects, and every failure of a callback lands in the app with
``#signin-error=REASON``, never a JSON error page. ``exchange`` is the app's
POST that turns the one-time code into a session. ``link`` is a signed-in
account's POST that answers the provider's URL of a round trip binding the
identity signed in there to that account (the browser then goes there).

The PKCE verifier rides in a cookie from ``start`` to ``callback``: HttpOnly,
SameSite=Lax (the provider's redirect back is a cross-site navigation, which a
Strict cookie would not follow), Secure when PUSHCORE_PUBLIC_URL is https,
scoped to the callback's path and named after its round trip, so that two
sign-ins begun in two tabs do not overwrite each other's.

The browser's own secret rides in another (``pushcore_oidc_browser``, same
flags, for the whole site: the exchange is ``/api/auth/oidc/exchange`` and
the app's ``/app/session/oidc``): only the browser that started a sign-in
holds it, so only that browser can exchange its one-time code.
"""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from pushcore.config import Settings
from pushcore.converter import LinkStartView, SessionView, structure_request
from pushcore.domain import errors as e
from pushcore.domain.errors import NotFound, Unavailable
from pushcore.domain.oidc import (
    CALLBACK_PATH,
    CODE_TTL,
    FLOW_TTL,
    LinkRequest,
    SignInError,
    SignInExchange,
    SignInFailed,
    failed_location,
    hash_secret,
    signed_in_location,
)
from pushcore.services import OidcService, Services
from pushcore.services.oidc import INVALID_CODE, OTHER_BROWSER, Departure
from pushcore_http import address_limits, signin_limits
from pushcore_http.answers import RETRY_AFTER, Json, answer, merge, refusal, shared
from pushcore_http.auth import PUBLIC, caller_of, user
from pushcore_http.body import (
    MAX_BODY_BYTES,
    check_media_type,
    parse_json,
    read_body,
    read_json,
)
from pushcore_http.endpoints import Endpoints
from pushcore_http.routes import services_of, view_response

log = logging.getLogger("pushcore.oidc")
routes = Endpoints("Single sign-on")

COOKIE_PREFIX = "pushcore_oidc_"
BROWSER_COOKIE = COOKIE_PREFIX + "browser"
# Neither the provider's page nor the app may be handed these URLs in a Referer,
# and no cache may keep a redirect that carries a code.
_PRIVATE = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}


_NOT_CONFIGURED = refusal(
    NotFound("Single sign-on is not configured on this server"),
    "Single sign-on is not configured (PUSHCORE_OIDC_ISSUER, _CLIENT_ID, _CLIENT_SECRET).",
)
_NEXT = {"name": "next", "in": "query", "required": False}
_NEXT |= {
    "schema": {"type": "string", "default": "/app/"},
    "description": "The path of this site to return to once signed in; anything else "
    "(another site, `//host`) is replaced by `/app/`.",
}
_REASONS = ", ".join(f"`{reason.value}`" for reason in SignInError)


def _moved(description: str) -> Json:
    location = {"schema": {"type": "string", "format": "uri"}, "description": "Where to go."}
    return {"302": {"description": description, "headers": {"Location": location}}}


def cookie_name(state: str) -> str:
    """The cookie holding the verifier of the round trip with this state."""
    return COOKIE_PREFIX + hash_secret(state)[:16]


def _oidc(services: Services) -> OidcService:
    if services.oidc is None:
        raise NotFound("Single sign-on is not configured on this server")
    return services.oidc


def _redirect(location: str) -> RedirectResponse:
    return RedirectResponse(location, 302, headers=_PRIVATE)


def _unavailable(base: str, exc: Unavailable) -> RedirectResponse:
    # A navigation lands in the app, told so, rather than on a JSON 503 page.
    log.warning("single sign-on: database unavailable: %s", exc.message)
    return _redirect(failed_location(base, SignInError.UNAVAILABLE))


def _cookie_path(settings: Settings) -> str:
    return urlsplit(settings.public_base).path + CALLBACK_PATH


def _keep_in_browser(response: Response, settings: Settings, departure: Departure) -> None:
    """The round trip's verifier for its callback, and the browser's own secret."""
    secure = settings.public_base.startswith("https:")
    response.set_cookie(
        cookie_name(departure.state),
        departure.verifier,
        max_age=int(FLOW_TTL.total_seconds()),
        path=_cookie_path(settings),
        secure=secure,
        httponly=True,
        samesite="lax",
    )
    response.set_cookie(
        BROWSER_COOKIE,
        departure.browser,
        max_age=int((FLOW_TTL + CODE_TTL).total_seconds()),
        path=urlsplit(settings.public_base).path + "/",
        secure=secure,
        httponly=True,
        samesite="lax",
    )


@routes.get(
    "/api/auth/oidc/start",
    "Sign in with the provider",
    PUBLIC,
    _moved(
        "To the provider's authorization endpoint (code flow with PKCE S256, a state "
        "and a nonce, scope `openid profile email`); or, when the provider cannot be "
        "reached, to `/app/#signin-error=provider` (`unavailable` when the database "
        "cannot serve)."
    )
    | _NOT_CONFIGURED
    # Each start takes from the address's sign-in bucket (signin_limits.py).
    | refusal(
        e.RateLimited("Too many sign-ins from this address", 2),
        "Too many sign-in attempts from this address.",
        RETRY_AFTER,
    ),
    "A browser navigation, not an API call. The round trip's PKCE verifier is kept in "
    "an HttpOnly cookie for the callback; the round trip must end within 10 minutes.",
    parameters=[_NEXT],
)
@signin_limits.held_refusals
async def start(request: Request) -> Response:
    """Leave for the provider; ``?next=`` is where to return (a path of this site)."""
    services = services_of(request)
    oidc = _oidc(services)
    # Each start stores a round trip: a flood of them is refused per address.
    signin_limits.admit_address(request)
    try:
        departure = await oidc.start(
            request.query_params.get("next"), request.cookies.get(BROWSER_COOKIE)
        )
    except SignInFailed as failed:
        log.warning("single sign-on could not start: %s", failed)
        return _redirect(failed_location(services.settings.public_base, failed.reason))
    except Unavailable as exc:
        return _unavailable(services.settings.public_base, exc)
    response = _redirect(departure.url)
    _keep_in_browser(response, services.settings, departure)
    return response


@routes.post(
    "/api/auth/oidc/link",
    "Link single sign-on to this account",
    user(idempotent=False),
    answer(200, "Where to send this browser: the provider.", LinkStartView) | _NOT_CONFIGURED,
    "Binds the identity the person then signs in as at the provider to the signed-in "
    "account, which that identity signs into from then on. The answer sets the round "
    "trip's cookies (call it with cookies: `credentials: 'same-origin'`); the browser "
    "then opens `url`, and the callback lands on `next` with `#signin=CODE`, or on "
    "`/app/#signin-error=identity_linked` when the identity is another account's.",
    body=LinkRequest,
)
async def link(request: Request) -> Response:
    """The provider's URL of a round trip that binds the identity signed in there to
    the caller's account; the browser keeps the round trip's cookies from this answer."""
    services = services_of(request)
    oidc = _oidc(services)
    raw = await read_body(request, MAX_BODY_BYTES)
    if raw:
        check_media_type(request.headers.get("content-type"))
    # A POST without parameters may come without a body.
    given = structure_request(LinkRequest, parse_json(raw) if raw else {})
    try:
        departure = await oidc.link(
            caller_of(request).account_id, given.next, request.cookies.get(BROWSER_COOKIE)
        )
    except SignInFailed as failed:
        log.warning("single sign-on could not start a link: %s", failed)
        raise Unavailable("The identity provider cannot be reached; try again shortly") from None
    response = view_response(LinkStartView(url=departure.url))
    response.headers["Cache-Control"] = "no-store"
    _keep_in_browser(response, services.settings, departure)
    return response


@routes.get(
    CALLBACK_PATH,
    "Back from the provider",
    PUBLIC,
    _moved(
        "To `next` with a one-time code in the fragment (`#signin=CODE`, good once "
        "for 60 s, for `POST /api/auth/oidc/exchange`); or to "
        f"`/app/#signin-error=REASON`, REASON one of {_REASONS}, signing nobody in."
    )
    | _NOT_CONFIGURED,
    "The provider's redirect URI (PUSHCORE_PUBLIC_URL + this path). Checks the state "
    "(once, from the browser that started), exchanges the code, verifies the ID token "
    "(signature, issuer, audience, expiry, nonce; `email_verified` true when the "
    "account claim is `email`). The provider's identity (`iss`, `sub`) signs into "
    "the account bound to it; on its first sign-in the account (its id from "
    "PUSHCORE_OIDC_ACCOUNT_CLAIM, kept as given) is created and bound, unless an "
    "account of that id exists already (`account_exists`: nobody is signed in; link "
    "it from a signed-in session instead, `POST /api/auth/oidc/link`).",
    parameters=[
        {"name": name, "in": "query", "required": False, "schema": {"type": "string"}}
        | {"description": about}
        for name, about in (
            ("code", "The provider's authorization code."),
            ("state", "The round trip's state, as sent to the provider."),
            ("error", "The provider's error, when it signed nobody in."),
        )
    ],
)
async def callback(request: Request) -> Response:
    """Back from the provider: to ``next`` with ``#signin=CODE``, or to the app with
    ``#signin-error=REASON``."""
    services = services_of(request)
    oidc = _oidc(services)
    base = services.settings.public_base
    query = request.query_params
    state = query.get("state")
    verifier = request.cookies.get(cookie_name(state)) if state else None
    try:
        arrival = await oidc.finish(state, query.get("code"), query.get("error"), verifier)
        response = _redirect(signed_in_location(base, arrival.next_path, arrival.code))
    except SignInFailed as failed:
        log.warning("single sign-on refused: %s", failed)
        response = _redirect(failed_location(base, failed.reason))
    except Unavailable as exc:
        response = _unavailable(base, exc)
    if state:
        response.delete_cookie(
            cookie_name(state), path=_cookie_path(services.settings), httponly=True
        )
    return response


@routes.post(
    "/api/auth/oidc/exchange",
    "Exchange a sign-in code",
    PUBLIC,
    answer(200, "A session, as `POST /api/auth/login` answers.", SessionView)
    | merge(
        refusal(e.Unauthorized(INVALID_CODE), "Unknown, spent or expired code."),
        refusal(
            e.Unauthorized(OTHER_BROWSER),
            "The request lacks the cookie of the browser that started the sign-in.",
        ),
    )
    | _NOT_CONFIGURED
    # A bucket of its own per address (address_limits.py); when the database cannot
    # serve it is a 503 (the navigations land in the app instead).
    | merge(
        refusal(
            e.RateLimited("Too many requests from this address", 1),
            "Over 10 per second (burst 50) from this address.",
            RETRY_AFTER,
        ),
        shared("503"),
    ),
    "The code from the fragment of the callback's redirect; it is spent. Only the "
    "browser that started the sign-in can exchange it: the request must carry the "
    "HttpOnly cookie `pushcore_oidc_browser` that `start` (or `link`) set.",
    body=SignInExchange,
)
@signin_limits.held_refusals
async def exchange(request: Request) -> Response:
    """A session for the one-time code of a finished sign-in."""
    services = services_of(request)
    oidc = _oidc(services)
    address_limits.admit(request, "oidc_exchange")
    given = structure_request(SignInExchange, await read_json(request))
    session = await run_in_threadpool(
        oidc.exchange, given.code, request.cookies.get(BROWSER_COOKIE)
    )
    return view_response(SessionView.of(session))


class HideCallbackQueries(logging.Filter):
    """uvicorn's access log (PUSHCORE_ACCESS_LOG) writes each request's path with its
    query; the callback's query carries the authorization code and the state, which
    no log may keep. Its line keeps the path and the status."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Let every record through, the callback's without its query."""
        args = record.args
        # uvicorn's args: client, method, path with query, HTTP version, status.
        if isinstance(args, tuple) and len(args) == 5 and isinstance(args[2], str):
            path = args[2]
            if path.startswith(CALLBACK_PATH) and "?" in path:
                record.args = (args[0], args[1], CALLBACK_PATH + "?(hidden)", *args[3:])
        return True


def hide_callback_queries(logger: logging.Logger | None = None) -> None:
    """Install :class:`HideCallbackQueries` on uvicorn's access log (once)."""
    logger = logger or logging.getLogger("uvicorn.access")
    if not any(isinstance(f, HideCallbackQueries) for f in logger.filters):
        logger.addFilter(HideCallbackQueries())
