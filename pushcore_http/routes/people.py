"""/api/auth/* and /api/account: sign-in, sessions and the signed-in account.

The /api/auth/ POSTs carry no credential of an account (password change
aside): they are public endpoints, so without the account's rate limit and
Idempotency-Key (a session is not an answer to keep and replay); the password
change takes a user token and is declared unkeyed too. Each attempt that costs
a hash is charged to the sign-in limits first (pushcore_http/signin_limits.py),
and refresh, logout and sign-up to a per-address bucket each
(pushcore_http/address_limits.py).
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from pushcore.converter import (
    AccountView,
    AuthMethodsView,
    DoneView,
    OidcMethodView,
    SessionView,
    structure_request,
)
from pushcore.converter.recipient import AccountPatch, parse_account_patch
from pushcore.domain import errors as e
from pushcore.domain.people import PasswordChange, SessionRefresh, SignIn, SignUp
from pushcore.services.people import BAD_SIGN_IN
from pushcore.services.sessions import INVALID
from pushcore_http import address_limits, signin_limits
from pushcore_http.answers import RETRY_AFTER, answer, merge, refusal, shared
from pushcore_http.auth import PUBLIC, USER, served, user
from pushcore_http.body import read_json
from pushcore_http.endpoints import Endpoints
from pushcore_http.routes import services_of, view_response

routes = Endpoints("People")
_SESSION = answer(200, "A session.", SessionView)
_DONE = answer(200, "Done: `{success: true}`.", DoneView)
_TOO_MANY = e.RateLimited("Too many sign-ins from this address", 2)
# Each attempt that costs a hash (signin_limits.py); the others per address (address_limits.py).
_LIMITED = refusal(
    _TOO_MANY,
    "Too many sign-in attempts from this address, or failures of it at this account.",
    RETRY_AFTER,
) | shared("503")
_ADDRESS_LIMITED = refusal(
    _TOO_MANY, "Too many requests from this client address.", RETRY_AFTER
) | shared("503")


@routes.get(
    "/api/auth/methods",
    "How to sign in",
    PUBLIC,
    answer(200, "The sign-in methods.", AuthMethodsView),
)
async def methods(request: Request) -> Response:
    """How people can sign in here."""
    settings = services_of(request).settings
    oidc = OidcMethodView(name=settings.oidc_name) if settings.oidc_enabled else None
    return view_response(AuthMethodsView(password=True, signup=settings.signup, oidc=oidc))


@routes.post(
    "/api/auth/login",
    "Sign in with a password",
    PUBLIC,
    merge(
        _SESSION,
        refusal(e.Unauthorized(BAD_SIGN_IN), "An unknown account or a wrong password."),
        _LIMITED,
    ),
    "The account as made (`Alice` signs in as `alice`).",
    body=SignIn,
)
@signin_limits.held_refusals
async def login(request: Request) -> Response:
    """A session for an account and its password."""
    services = services_of(request)
    signin_limits.admit_address(request)
    given = structure_request(SignIn, await read_json(request))
    signin_limits.admit_account(request, given.account)
    try:
        session = await services.people.sign_in(given.account, given.password)
    except e.Unauthorized:
        signin_limits.failed(request, given.account)
        raise
    return view_response(SessionView.of(session))


@routes.post(
    "/api/auth/signup",
    "Create an account",
    PUBLIC,
    merge(
        answer(201, "The new account's session.", SessionView),
        refusal(e.SignupDisabled("Sign-up is disabled on this server")),
        refusal(e.AccountExists("An account 'alice' exists already")),
        _LIMITED,
    ),
    "Only when PUSHCORE_SIGNUP is true.",
    body=SignUp,
)
@signin_limits.held_refusals
async def signup(request: Request) -> Response:
    """A new account with a password, signed in (when PUSHCORE_SIGNUP is on)."""
    services = services_of(request)
    if not services.people.signup:
        raise e.SignupDisabled("Sign-up is disabled on this server")
    address_limits.admit(request, "signup")
    signin_limits.admit_address(request)
    given = structure_request(SignUp, await read_json(request))
    session = await services.people.sign_up(given.account, given.password)
    return view_response(SessionView.of(session), 201)


@routes.post(
    "/api/auth/refresh",
    "Refresh a session",
    PUBLIC,
    merge(_SESSION, refusal(e.Unauthorized(INVALID)), _ADDRESS_LIMITED),
    "Spends the refresh token and answers a new pair. A spent token presented "
    "again is refused and signs its whole sign-in out.",
    body=SessionRefresh,
)
@signin_limits.held_refusals
async def refresh(request: Request) -> Response:
    """A new session for a refresh token, which is spent."""
    services = services_of(request)
    address_limits.admit(request, "refresh")
    given = structure_request(SessionRefresh, await read_json(request))
    session = await run_in_threadpool(services.sessions.refresh, given.refresh_token)
    return view_response(SessionView.of(session))


@routes.post(
    "/api/auth/logout",
    "Sign out",
    PUBLIC,
    merge(_DONE, _ADDRESS_LIMITED),
    "Ends this sign-in's session: its refresh tokens are revoked, and within 1 s its"
    " access tokens are refused and its live channels end, in every API process."
    " Succeeds whatever the token.",
    body=SessionRefresh,
)
@signin_limits.held_refusals
async def logout(request: Request) -> Response:
    """End the refresh token's sign-in."""
    services = services_of(request)
    address_limits.admit(request, "logout")
    given = structure_request(SessionRefresh, await read_json(request))
    await run_in_threadpool(services.sessions.end, given.refresh_token)
    return view_response(DoneView(success=True))


@routes.post(
    "/api/auth/password",
    "Change the password",
    user(idempotent=False),
    _DONE,
    "A 400 names `currentPassword` when it is wrong, `newPassword` when it is one of"
    " the 10,000 most common. Every session of the account ends (its refresh and"
    " access tokens, its live channels), this one's too.",
    body=PasswordChange,
)
@signin_limits.held_refusals
async def password(request: Request) -> Response:
    """Change the signed-in account's password; every refresh token of it is revoked."""
    services, caller = served(request)
    signin_limits.admit_address(request)
    given = structure_request(PasswordChange, await read_json(request))
    signin_limits.admit_account(request, caller.account_id)
    try:
        await services.people.change_password(
            caller.account_id, given.current_password, given.new_password
        )
    except e.ValidationError:
        signin_limits.failed(request, caller.account_id)
        raise
    return view_response(DoneView(success=True))


@routes.get("/api/account", "The signed-in account", USER, answer(200, "The account.", AccountView))
async def account(request: Request) -> Response:
    """The signed-in account."""
    services, caller = served(request)
    found = await run_in_threadpool(services.accounts.ensure, caller.account_id)
    settings = await run_in_threadpool(services.recipients.settings, caller.account_id)
    return view_response(AccountView.of(found, settings))


@routes.declare(
    "PATCH",
    "/api/account",
    "Change your time zone, quiet hours or snooze",
    USER,
    answer(200, "The account, with its settings.", AccountView) | shared("400", "413", "415"),
    "Each field given is replaced whole; the others are kept. `timeZone`: an IANA name "
    "(an offset or unknown name is a 400). `quietHours`: null, or `{start, end, days, mode, "
    "bypass}` (an end before the start crosses midnight). `snoozeUntil`: a timestamp or "
    "null. What your devices have held is screened again at once under the new settings.",
    body=AccountPatch,
)
async def update_account(request: Request) -> Response:
    """Replace the settings given; held deliveries follow the new ones at once."""
    services, caller = served(request)
    patch = parse_account_patch(await read_json(request))
    found = await run_in_threadpool(services.accounts.ensure, caller.account_id)
    settings = await run_in_threadpool(services.recipients.update, caller.account_id, patch)
    return view_response(AccountView.of(found, settings))
