"""Passwords and refresh tokens: what people sign in with."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

from pushcore.domain.people import Password, RefreshToken, SessionRevocation
from pushcore.storage.sql.accounts import Repository
from pushcore.storage.sql.rows import Table

PASSWORDS = Table("passwords", Password)
REFRESH_TOKENS = Table("refresh_tokens", RefreshToken)
SESSION_REVOCATIONS = Table("session_revocations", SessionRevocation)


class Passwords(Repository):
    def get(self, account_id: str) -> Password | None:
        """The account's password, or None."""
        rows = self._sql.select(PASSWORDS.columns, "passwords", "account_id = ?", account_id)
        return PASSWORDS.codec(self._dialect).decode(rows[0]) if rows else None

    def set(self, password: Password) -> None:
        """Store the account's password, replacing any other."""
        self._sql.run(
            f"{PASSWORDS.insert} ON CONFLICT (account_id)"
            " DO UPDATE SET hash = excluded.hash, set_at = excluded.set_at",
            PASSWORDS.codec(self._dialect).encode(password),
        )

    def holders(self) -> Collection[str]:
        """The ids of the accounts with a password."""
        return {row[0] for row in self._sql.all("SELECT account_id FROM passwords")}


class RefreshTokens(Repository):
    def add(self, token: RefreshToken) -> None:
        """Insert a new token; KeyError if its id or hash is taken."""
        self._sql.insert_new(
            REFRESH_TOKENS.insert, REFRESH_TOKENS.codec(self._dialect).encode(token), token.id
        )

    def find_by_hash(self, token_hash: str) -> RefreshToken | None:
        """The token with this hash, or None."""
        rows = self._sql.select(
            REFRESH_TOKENS.columns, "refresh_tokens", "token_hash = ?", token_hash
        )
        return REFRESH_TOKENS.codec(self._dialect).decode(rows[0]) if rows else None

    def spend(self, token_id: str, at: datetime) -> bool:
        """Mark the token used if it is neither used nor revoked; whether it was."""
        # One conditional UPDATE: of two refreshes of one token, in whichever
        # processes, only one finds used_at NULL (PostgreSQL checks the condition
        # again on the row the other committed).
        cursor = self._sql.run(
            "UPDATE refresh_tokens SET used_at = ?"
            " WHERE id = ? AND used_at IS NULL AND revoked_at IS NULL",
            (self._dialect.time(at), token_id),
        )
        return bool(cursor.rowcount > 0)

    def _revoke(self, where: str, key: str, at: datetime) -> int:
        cursor = self._sql.run(
            # Only the literal conditions below reach the text.
            f"UPDATE refresh_tokens SET revoked_at = ? WHERE {where} AND revoked_at IS NULL",  # noqa: S608
            (self._dialect.time(at), key),
        )
        return int(cursor.rowcount)

    def revoke_family(self, family_id: str, at: datetime) -> int:
        """Revoke every token of one sign-in; how many were still unrevoked."""
        return self._revoke("family_id = ?", family_id, at)

    def revoke_account(self, account_id: str, at: datetime) -> Collection[str]:
        """Revoke every token of the account; the families of those still unrevoked."""
        rows = self._sql.all(
            "UPDATE refresh_tokens SET revoked_at = ?"
            " WHERE account_id = ? AND revoked_at IS NULL RETURNING family_id",
            (self._dialect.time(at), account_id),
        )
        return {row[0] for row in rows}

    def delete_expired(self, before: datetime, limit: int) -> int:
        """Delete up to ``limit`` tokens expired before ``before``, oldest first; how many."""
        cursor = self._sql.run(
            "DELETE FROM refresh_tokens WHERE id IN (SELECT id FROM refresh_tokens"
            " WHERE expires_at < ? ORDER BY expires_at LIMIT ?)",
            (self._dialect.time(before), limit),
        )
        return int(cursor.rowcount)


class SessionRevocations(Repository):
    def add(self, revocations: Sequence[SessionRevocation]) -> None:
        """Record sessions signed out; one recorded already stays as it was."""
        codec = SESSION_REVOCATIONS.codec(self._dialect)
        self._sql.many(
            f"{SESSION_REVOCATIONS.insert} ON CONFLICT (session_id) DO NOTHING",
            [codec.encode(revocation) for revocation in revocations],
        )

    def in_force(self, now: datetime) -> Collection[str]:
        """The ids of the sessions whose access tokens may still be unexpired at ``now``."""
        rows = self._sql.all(
            "SELECT session_id FROM session_revocations WHERE until > ?",
            (self._dialect.time(now),),
        )
        return {row[0] for row in rows}

    def delete_expired(self, before: datetime, limit: int) -> int:
        """Delete up to ``limit`` revocations no longer in force at ``before``; how many."""
        cursor = self._sql.run(
            "DELETE FROM session_revocations WHERE session_id IN (SELECT session_id"
            " FROM session_revocations WHERE until <= ? ORDER BY until LIMIT ?)",
            (self._dialect.time(before), limit),
        )
        return int(cursor.rowcount)
