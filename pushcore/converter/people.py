"""Sign-in and the signed-in account as API JSON."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, ClassVar

import attrs

from pushcore.converter._views import CREATED, View, copy_fields
from pushcore.converter.recipient import QuietHoursView, quiet_hours_view
from pushcore.domain.localtime import DEFAULT_ZONE
from pushcore.domain.model import Account, Plan
from pushcore.domain.recipient import RecipientSettings
from pushcore.domain.validation import about

if TYPE_CHECKING:
    # A type only: the client imports the converter and must not load the services.
    from pushcore.services.sessions import Session

_ID = about("The account id (the JWT `sub`).", example="alice")
_PLAN = about("`free` (up to 3 streams) or `pro`.", example="free")


@attrs.frozen
class AccountView(View):
    """The signed-in account."""

    id: str = attrs.field(metadata=_ID)
    plan: Plan = attrs.field(metadata=_PLAN)
    created_at: datetime = attrs.field(metadata=CREATED)
    # The recipient's time (converter/recipient.py).
    time_zone: str = attrs.field(default=DEFAULT_ZONE, metadata=about("An IANA time zone name."))
    quiet_hours: QuietHoursView | None = attrs.field(
        default=None, metadata=about("Quiet hours, or null for none.")
    )
    snooze_until: datetime | None = attrs.field(
        default=None, metadata=about("Device deliveries are held until then; or null.")
    )

    @classmethod
    def of(cls, account: Account, settings: RecipientSettings | None = None) -> AccountView:
        """The view of an account, with its settings."""
        given = settings or RecipientSettings()
        return copy_fields(
            cls,
            account,
            time_zone=given.time_zone,
            quiet_hours=quiet_hours_view(given),
            snooze_until=given.snooze_until,
        )


@attrs.frozen
class SessionAccountView(View):
    """Whose session it is."""

    id: str = attrs.field(metadata=_ID)
    plan: Plan = attrs.field(metadata=_PLAN)


@attrs.frozen
class SessionView(View):
    """A session: an access token for the API and a refresh token for the next one."""

    access_token: str = attrs.field(
        repr=False,
        metadata=about(
            "A JWT for `Authorization: Bearer`, signed by this server; valid `expiresIn` "
            "seconds (PUSHCORE_ACCESS_TOKEN_TTL).",
            example="eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl",
        ),
    )
    token_type: str = attrs.field(metadata=about(const="Bearer"))
    expires_in: int = attrs.field(metadata=about("Seconds the access token is valid.", minimum=1))
    refresh_token: str = attrs.field(
        repr=False,
        metadata=about(
            "Usable once, at `POST /api/auth/refresh`, within PUSHCORE_REFRESH_TOKEN_TTL; "
            "a spent one presented again ends the sign-in.",
            pattern="^psr_[A-Za-z0-9_-]{43}$",
            example="psr_" + "A" * 43,
        ),
    )
    account: SessionAccountView

    @classmethod
    def of(cls, session: Session) -> SessionView:
        """The view of a session just started or refreshed."""
        account = SessionAccountView(session.account.id, session.account.plan)
        return cls(
            session.access_token, "Bearer", session.expires_in, session.refresh_token, account
        )


@attrs.frozen
class OidcMethodView(View):
    """The single sign-on provider."""

    name: str = attrs.field(metadata=about("What its button says.", example="Single sign-on"))


@attrs.frozen
class AuthMethodsView(View):
    """How people can sign in to this server."""

    password: bool = attrs.field(metadata=about("Sign-in with a password."))
    signup: bool = attrs.field(metadata=about("Whether `POST /api/auth/signup` makes accounts."))
    oidc: OidcMethodView | None = attrs.field(metadata=about("Single sign-on, when set up."))


@attrs.frozen
class DoneView(View):
    """What an action without a resource answers: `{success: true}`."""

    schema_name: ClassVar[str] = "Done"

    success: bool = attrs.field(metadata=about(const=True))


@attrs.frozen
class LinkStartView(View):
    """Where the browser goes to link the account with single sign-on."""

    schema_name: ClassVar[str] = "OidcLinkStart"

    url: str = attrs.field(
        metadata=about(
            "The provider's authorization URL: open it in this browser (a navigation).",
            example="https://id.example.com/authorize?response_type=code&client_id=pushcore",
        )
    )
