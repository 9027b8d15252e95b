"""OpenAPI of /api/auth/oidc/*: single sign-on (when PUSHCORE_OIDC_* configure it)."""

from __future__ import annotations

from pushcore.converter import LinkStartView, SessionView
from pushcore.domain import errors as e
from pushcore.domain.oidc import LinkRequest, SignInError, SignInExchange
from pushcore.services.oidc import INVALID_CODE, OTHER_BROWSER
from pushcore_http.openapi import _common as api

_NOT_CONFIGURED = api.refusal(
    e.NotFound("Single sign-on is not configured on this server"),
    "Single sign-on is not configured (PUSHCORE_OIDC_ISSUER, _CLIENT_ID, _CLIENT_SECRET).",
)
# Each start takes from the address's sign-in bucket (signin_limits.py).
_TOO_MANY = api.refusal(
    e.RateLimited("Too many sign-ins from this address", 2),
    "Too many sign-in attempts from this address.",
    api.RETRY_AFTER,
)
# The exchange has a bucket of its own per address (address_limits.py); when the
# database cannot serve it is a 503 (the navigations land in the app instead).
_LIMITED = api.merge(
    api.refusal(
        e.RateLimited("Too many requests from this address", 1),
        "Over 10 per second (burst 50) from this address.",
        api.RETRY_AFTER,
    ),
    api.shared("503"),
)
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
            "(signature, issuer, audience, expiry, nonce; `email_verified` true when the "
            "account claim is `email`). The provider's identity (`iss`, `sub`) signs into "
            "the account bound to it; on its first sign-in the account (its id from "
            "PUSHCORE_OIDC_ACCOUNT_CLAIM, kept as given) is created and bound, unless an "
            "account of that id exists already (`account_exists`: nobody is signed in; link "
            "it from a signed-in session instead, `POST /api/auth/oidc/link`).",
            parameters=callback_parameters,
        ),
        "post /api/auth/oidc/exchange: Exchange a sign-in code": api.operation(
            api.PUBLIC,
            api.answer(200, "A session, as `POST /api/auth/login` answers.", SessionView)
            | api.merge(
                api.refusal(e.Unauthorized(INVALID_CODE), "Unknown, spent or expired code."),
                api.refusal(
                    e.Unauthorized(OTHER_BROWSER),
                    "The request lacks the cookie of the browser that started the sign-in.",
                ),
            )
            | _NOT_CONFIGURED
            | _LIMITED,
            "The code from the fragment of the callback's redirect; it is spent. Only the "
            "browser that started the sign-in can exchange it: the request must carry the "
            "HttpOnly cookie `pushcore_oidc_browser` that `start` (or `link`) set.",
            body=SignInExchange,
        ),
        "post /api/auth/oidc/link: Link single sign-on to this account": api.operation(
            api.USER,
            api.answer(200, "Where to send this browser: the provider.", LinkStartView)
            | _NOT_CONFIGURED,
            "Binds the identity the person then signs in as at the provider to the signed-in "
            "account, which that identity signs into from then on. The answer sets the round "
            "trip's cookies (call it with cookies: `credentials: 'same-origin'`); the browser "
            "then opens `url`, and the callback lands on `next` with `#signin=CODE`, or on "
            "`/app/#signin-error=identity_linked` when the identity is another account's.",
            body=LinkRequest,
        ),
    }
