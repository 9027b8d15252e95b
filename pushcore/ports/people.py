"""Store ports of people who sign in: password hashes and refresh tokens.

What every store method raises besides what its docstring says: as in
:mod:`pushcore.ports.accounts`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pushcore.domain.people import Password, RefreshToken, SessionRevocation


class PasswordRepository(Protocol):
    """Password hashes, one per account at most."""

    def get(self, account_id: str) -> Password | None:
        """The account's password, or None when it has none."""
        ...

    def set(self, password: Password) -> None:
        """Store ``password`` as its account's, replacing any other."""
        ...

    def holders(self) -> Collection[str]:
        """The ids of the accounts that have a password."""
        ...


class RefreshTokenRepository(Protocol):
    """Refresh tokens, by the hash of the token; only hashes are stored.

    Spending is decided by the database (:meth:`spend`), so two refreshes of one
    token, in any processes, cannot both succeed.
    """

    def add(self, token: RefreshToken) -> None:
        """Insert a new token; KeyError when its id or hash is taken."""
        ...

    def find_by_hash(self, token_hash: str) -> RefreshToken | None:
        """The token whose SHA-256 hash is ``token_hash``, or None."""
        ...

    def spend(self, token_id: str, at: datetime) -> bool:
        """Mark the token used at ``at`` if it is neither used nor revoked; whether it was."""
        ...

    def revoke_family(self, family_id: str, at: datetime) -> int:
        """Revoke every token of one sign-in not yet revoked; how many."""
        ...

    def revoke_account(self, account_id: str, at: datetime) -> Collection[str]:
        """Revoke every token of the account not yet revoked; the families (sessions)
        those tokens belonged to."""
        ...

    def delete_expired(self, before: datetime, limit: int) -> int:
        """Delete up to ``limit`` tokens that expired before ``before``; how many."""
        ...


class SessionRevocationRepository(Protocol):
    """Sessions signed out before their access tokens expire (read by every API
    process, a few times a second: :meth:`in_force` is one index range)."""

    def add(self, revocations: Sequence[SessionRevocation]) -> None:
        """Record sessions signed out; a session recorded already is left as it was."""
        ...

    def in_force(self, now: datetime) -> Collection[str]:
        """The ids of the sessions whose revocation still holds at ``now`` (``until``
        after it)."""
        ...

    def delete_expired(self, before: datetime, limit: int) -> int:
        """Delete up to ``limit`` revocations whose ``until`` is not after ``before``;
        how many."""
        ...
