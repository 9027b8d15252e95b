"""OpenAPI of /api/auth/oidc/*: single sign-on (when PUSHCORE_OIDC_* configure it)."""

from __future__ import annotations

from pushcore.converter import SessionView
from pushcore.domain import errors as e
from pushcore.domain.oidc import SignInError, SignInExchange
from pushcore.services.oidc import INVALID_CODE
from pushcore_http.openapi import _common as api

_NOT_CONFIGURED = api.refusal(
    e.NotFound("Single sign-on is not configured on this server"),
    "Single sign-on is not configured (PUSHCORE_OIDC_ISSUER, _CLIENT_ID, _CLIENT_SECRET).",
)
# Each start and exchange takes from the address's sign-in bucket (signin_limits.py).
_TOO_MANY = api.refusal(
    e.RateLimited("Too many sign-ins from this address", 2),
    "Too many sign-in attempts from this address.",
    api.RETRY_AFTER,
)
# The navigations land in the app when the database cannot serve; the exchange is a 503.
_LIMITED = api.merge(_TOO_MANY, api.shared("503"))
_REASONS = ", ".join(f"`{reason.value}`" for reason in SignInError)


def _redirect(description: str) -> api.Json:
    location = {"schema": {"type": "string", "format": "uri"}, "description": "Where to go."}
    return {"302": {"description": description, "headers": {"Location": location}}}


def operations() -> api.Json:
    """The single sign-on operations, by method and path; none takes a credential."""
    next_parameter = {
        "name": "next",
        "in": "query",
        "required": False,
        "schema": {"type": "string", "default": "/app/"},
        "description": "The path of this site to return to once signed in; anything else "
        "(another site, `//host`) is replaced by `/app/`.",
    }
    callback_parameters = [
        {"name": name, "in": "query", "required": False, "schema": {"type": "string"}}
        | {"description": about}
        for name, about in (
            ("code", "The provider's authorization code."),
            ("state", "The round trip's state, as sent to the provider."),
            ("error", "The provider's error, when it signed nobody in."),
        )
    ]
    return {
        "get /api/auth/oidc/start: Sign in with the provider": api.operation(
            api.PUBLIC,
            _redirect(
                "To the provider's authorization endpoint (code flow with PKCE S256, a state "
                "and a nonce, scope `openid profile email`); or, when the provider cannot be "
                "reached, to `/app/#signin-error=provider` (`unavailable` when the database "
                "cannot serve)."
            )
            | _NOT_CONFIGURED
            | _TOO_MANY,
            "A browser navigation, not an API call. The round trip's PKCE verifier is kept in "
            "an HttpOnly cookie for the callback; the round trip must end within 10 minutes.",
            parameters=[next_parameter],
        ),
        "get /api/auth/oidc/callback: Back from the provider": api.operation(
            api.PUBLIC,
            _redirect(
                "To `next` with a one-time code in the fragment (`#signin=CODE`, good once "
                "for 60 s, for `POST /api/auth/oidc/exchange`); or to "
                f"`/app/#signin-error=REASON`, REASON one of {_REASONS}, signing nobody in."
            )
            | _NOT_CONFIGURED,
            "The provider's redirect URI (PUSHCORE_PUBLIC_URL + this path). Checks the state "
            "(once, from the browser that started), exchanges the code, verifies the ID token "
            "(signature, issuer, audience, expiry, nonce) and creates the account (its id "
            "from PUSHCORE_OIDC_ACCOUNT_CLAIM, kept as given) on its first sign-in.",
            parameters=callback_parameters,
        ),
        "post /api/auth/oidc/exchange: Exchange a sign-in code": api.operation(
            api.PUBLIC,
            api.answer(200, "A session, as `POST /api/auth/login` answers.", SessionView)
            | api.refusal(e.Unauthorized(INVALID_CODE), "Unknown, spent or expired code.")
            | _NOT_CONFIGURED
            | _LIMITED,
            "The code from the fragment of the callback's redirect; it is spent.",
            body=SignInExchange,
        ),
    }
