"""The ports of single sign-on: the rows of a sign-in, and the OpenID provider."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pushcore.domain.oidc import Identity, SignInCode, SignInFlow


class SignInRepository(Protocol):
    """Round trips to the provider and one-time codes, each taken at most once; the
    provider identities bound to accounts.

    Taking is decided by the database (a delete that returns the row), so API
    processes sharing a database never both take one. Each method raises only
    the database's own errors.
    """

    def add_flow(self, flow: SignInFlow) -> None:
        """Store a round trip that has just left for the provider."""
        ...

    def take_flow(self, state_hash: str) -> SignInFlow | None:
        """Delete the round trip with this state hash and return it; None when there is
        none (never made, taken already, or swept). Expired ones are returned too."""
        ...

    def add_code(self, code: SignInCode) -> None:
        """Store the one-time code of a finished sign-in."""
        ...

    def take_code(self, code_hash: str) -> SignInCode | None:
        """Delete the one-time code with this hash and return it; None when there is none.
        Expired ones are returned too."""
        ...

    def bound_account(self, issuer: str, subject: str) -> str | None:
        """The account the identity (``iss``, ``sub``) is bound to, or None."""
        ...

    def is_bound(self, account_id: str) -> bool:
        """Whether some identity is bound to the account."""
        ...

    def take_legacy(self, account_id: str) -> bool:
        """Take the account off the list of those single sign-on made before identities
        were bound (migration 0012); whether it was on it. Of two takers, one gets it."""
        ...

    def bind(self, identity: Identity) -> None:
        """Bind the identity to its account (which leaves the legacy list); KeyError when
        the identity is bound already."""
        ...

    def delete_expired(self, before: datetime, limit: int) -> int:
        """Delete up to ``limit`` round trips and up to ``limit`` codes that expired before
        ``before``; how many rows went."""
        ...


class IdentityProvider(Protocol):
    """The OpenID provider, as a sign-in's two legs need it.

    Raises :class:`pushcore.domain.oidc.SignInFailed`: ``provider`` when it
    cannot be reached or refuses, ``token`` when its ID token does not verify,
    ``expired`` when the ID token is past its ``exp``.
    """

    async def authorization_url(self, state: str, nonce: str, verifier: str) -> str:
        """Where to send the browser: the provider's authorization endpoint with the
        code flow's parameters, the PKCE S256 challenge of ``verifier`` and ``nonce``."""
        ...

    async def redeem(self, code: str, verifier: str) -> Mapping[str, object]:
        """Exchange the authorization ``code`` (with the PKCE ``verifier`` and the client's
        credentials) and return the claims of the ID token, verified: signature from the
        provider's keys, issuer, audience (and ``azp``), expiry. The nonce is the
        caller's to check."""
        ...
