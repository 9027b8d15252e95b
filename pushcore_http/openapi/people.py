"""OpenAPI of /api/auth/* (sign-in and sessions) and /api/account."""

from __future__ import annotations

from pushcore.converter import AccountView, AuthMethodsView, DoneView, SessionView
from pushcore.domain import errors as e
from pushcore.domain.people import PasswordChange, SessionRefresh, SignIn, SignUp
from pushcore.services.people import BAD_SIGN_IN
from pushcore.services.sessions import INVALID
from pushcore_http.openapi import _common as api

_TOO_MANY = e.RateLimited("Too many sign-ins from this address", 2)
_ENDPOINT_TOO_MANY = e.RateLimited("Too many requests to /api/auth/refresh from this address", 1)
_LIMITED = "Too many sign-in attempts from this address, or failures of it at this account."


def operations() -> api.Json:
    """The sign-in operations, by method and path."""
    session = api.answer(200, "A session.", SessionView)
    done = api.answer(200, "Done: `{success: true}`.", DoneView)
    limited = api.refusal(_TOO_MANY, _LIMITED, api.RETRY_AFTER) | api.shared("503")
    endpoint_limited = api.refusal(
        _TOO_MANY, "Too many requests from this client address.", api.RETRY_AFTER
    ) | api.shared("503")
    wrong = api.refusal(e.Unauthorized(BAD_SIGN_IN), "An unknown account or a wrong password.")
    return {
        "get /api/auth/methods: How to sign in": api.operation(
            api.PUBLIC, api.answer(200, "The sign-in methods.", AuthMethodsView)
        ),
        "post /api/auth/login: Sign in with a password": api.operation(
            api.PUBLIC,
            api.merge(session, wrong, limited),
            "The account as made (`Alice` signs in as `alice`).",
            body=SignIn,
        ),
        "post /api/auth/refresh: Refresh a session": api.operation(
            api.PUBLIC,
            api.merge(session, api.refusal(e.Unauthorized(INVALID)), endpoint_limited),
            "Spends the refresh token and answers a new pair. A spent token presented "
            "again is refused and signs its whole sign-in out.",
            body=SessionRefresh,
        ),
        "post /api/auth/logout: Sign out": api.operation(
            api.PUBLIC,
            api.merge(done, endpoint_limited),
            "Ends this sign-in's session: its refresh tokens are revoked, and within 1 s its"
            " access tokens are refused and its live channels end, in every API process."
            " Succeeds whatever the token.",
            body=SessionRefresh,
        ),
        "post /api/auth/signup: Create an account": api.operation(
            api.PUBLIC,
            api.merge(
                api.answer(201, "The new account's session.", SessionView),
                api.refusal(e.SignupDisabled("Sign-up is disabled on this server")),
                api.refusal(e.AccountExists("An account 'alice' exists already")),
                limited,
            ),
            "Only when PUSHCORE_SIGNUP is true.",
            body=SignUp,
        ),
        "post /api/auth/password: Change the password": api.operation(
            api.USER,
            done,
            "A 400 names `currentPassword` when it is wrong, `newPassword` when it is one of"
            " the 10,000 most common. Every session of the account ends (its refresh and"
            " access tokens, its live channels), this one's too.",
            body=PasswordChange,
        ),
        "get /api/account: The signed-in account": api.operation(
            api.USER, api.answer(200, "The account.", AccountView)
        ),
    }
