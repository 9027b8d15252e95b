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
from starlette.routing import Route

from pushcore.converter import (
    AccountView,
    AuthMethodsView,
    DoneView,
    OidcMethodView,
    SessionView,
    structure_request,
)
from pushcore.domain.errors import SignupDisabled, Unauthorized, ValidationError
from pushcore.domain.people import PasswordChange, SessionRefresh, SignIn, SignUp
from pushcore_http import address_limits, signin_limits
from pushcore_http.auth import Accepts, authenticated, caller_of, public
from pushcore_http.body import read_json
from pushcore_http.routes import services_of, view_response


@public
async def methods(request: Request) -> Response:
    """How people can sign in here."""
    settings = services_of(request).settings
    oidc = OidcMethodView(name=settings.oidc_name) if settings.oidc_enabled else None
    return view_response(AuthMethodsView(password=True, signup=settings.signup, oidc=oidc))


@public
@signin_limits.held_refusals
async def login(request: Request) -> Response:
    """A session for an account and its password."""
    services = services_of(request)
    signin_limits.admit_address(request)
    given = structure_request(SignIn, await read_json(request))
    signin_limits.admit_account(request, given.account)
    try:
        session = await services.people.sign_in(given.account, given.password)
    except Unauthorized:
        signin_limits.failed(request, given.account)
        raise
    return view_response(SessionView.of(session))


@public
@signin_limits.held_refusals
async def signup(request: Request) -> Response:
    """A new account with a password, signed in (when PUSHCORE_SIGNUP is on)."""
    services = services_of(request)
    if not services.people.signup:
        raise SignupDisabled("Sign-up is disabled on this server")
    address_limits.admit(request, "signup")
    signin_limits.admit_address(request)
    given = structure_request(SignUp, await read_json(request))
    session = await services.people.sign_up(given.account, given.password)
    return view_response(SessionView.of(session), 201)


@public
@signin_limits.held_refusals
async def refresh(request: Request) -> Response:
    """A new session for a refresh token, which is spent."""
    services = services_of(request)
    address_limits.admit(request, "refresh")
    given = structure_request(SessionRefresh, await read_json(request))
    session = await run_in_threadpool(services.sessions.refresh, given.refresh_token)
    return view_response(SessionView.of(session))


@public
@signin_limits.held_refusals
async def logout(request: Request) -> Response:
    """End the refresh token's sign-in."""
    services = services_of(request)
    address_limits.admit(request, "logout")
    given = structure_request(SessionRefresh, await read_json(request))
    await run_in_threadpool(services.sessions.end, given.refresh_token)
    return view_response(DoneView(success=True))


@authenticated(Accepts.USER, idempotent=False)
@signin_limits.held_refusals
async def password(request: Request) -> Response:
    """Change the signed-in account's password; every refresh token of it is revoked."""
    services = services_of(request)
    user = caller_of(request)
    signin_limits.admit_address(request)
    given = structure_request(PasswordChange, await read_json(request))
    signin_limits.admit_account(request, user.account_id)
    try:
        await services.people.change_password(
            user.account_id, given.current_password, given.new_password
        )
    except ValidationError:
        signin_limits.failed(request, user.account_id)
        raise
    return view_response(DoneView(success=True))


@authenticated(Accepts.USER)
async def account(request: Request) -> Response:
    """The signed-in account."""
    services = services_of(request)
    user = caller_of(request)
    found = await run_in_threadpool(services.accounts.ensure, user.account_id)
    return view_response(AccountView.of(found))


routes = [
    Route("/api/auth/methods", methods, methods=["GET"]),
    Route("/api/auth/login", login, methods=["POST"]),
    Route("/api/auth/refresh", refresh, methods=["POST"]),
    Route("/api/auth/logout", logout, methods=["POST"]),
    Route("/api/auth/signup", signup, methods=["POST"]),
    Route("/api/auth/password", password, methods=["POST"]),
    Route("/api/account", account, methods=["GET"]),
]
