"""Single sign-on: round trips and one-time codes, each taken once; identities bound to accounts."""

from __future__ import annotations

from datetime import datetime
from typing import TypeVar

from pushcore.domain.oidc import Identity, SignInCode, SignInFlow
from pushcore.storage.sql.accounts import Repository
from pushcore.storage.sql.rows import Table

OIDC_FLOWS = Table("oidc_flows", SignInFlow)
OIDC_CODES = Table("oidc_codes", SignInCode)
OIDC_IDENTITIES = Table("oidc_identities", Identity)

T = TypeVar("T")


class SignIns(Repository):
    def add_flow(self, flow: SignInFlow) -> None:
        """See :class:`pushcore.ports.SignInRepository`."""
        self._sql.run(OIDC_FLOWS.insert, OIDC_FLOWS.codec(self._dialect).encode(flow))

    def take_flow(self, state_hash: str) -> SignInFlow | None:
        """See :class:`pushcore.ports.SignInRepository`."""
        return self._take(OIDC_FLOWS, "state_hash", state_hash)

    def add_code(self, code: SignInCode) -> None:
        """See :class:`pushcore.ports.SignInRepository`."""
        self._sql.run(OIDC_CODES.insert, OIDC_CODES.codec(self._dialect).encode(code))

    def take_code(self, code_hash: str) -> SignInCode | None:
        """See :class:`pushcore.ports.SignInRepository`."""
        return self._take(OIDC_CODES, "code_hash", code_hash)

    def bound_account(self, issuer: str, subject: str) -> str | None:
        """See :class:`pushcore.ports.SignInRepository`."""
        rows = self._sql.select(
            "account_id", "oidc_identities", "issuer = ? AND subject = ?", issuer, subject
        )
        return str(rows[0][0]) if rows else None

    def is_bound(self, account_id: str) -> bool:
        """See :class:`pushcore.ports.SignInRepository`."""
        return bool(self._sql.select("1", "oidc_identities", "account_id = ?", account_id))

    def take_legacy(self, account_id: str) -> bool:
        """See :class:`pushcore.ports.SignInRepository`."""
        return self._delete_legacy(account_id) > 0

    def bind(self, identity: Identity) -> None:
        """See :class:`pushcore.ports.SignInRepository`."""
        self._sql.insert_new(
            OIDC_IDENTITIES.insert,
            OIDC_IDENTITIES.codec(self._dialect).encode(identity),
            identity.subject,
        )
        self._delete_legacy(identity.account_id)

    def _delete_legacy(self, account_id: str) -> int:
        cursor = self._sql.run(
            "DELETE FROM oidc_legacy_accounts WHERE account_id = ?", (account_id,)
        )
        return int(cursor.rowcount)

    def delete_expired(self, before: datetime, limit: int) -> int:
        """See :class:`pushcore.ports.SignInRepository`."""
        deleted = 0
        for table, key in ((OIDC_FLOWS, "state_hash"), (OIDC_CODES, "code_hash")):
            cursor = self._sql.run(
                f"DELETE FROM {table.name} WHERE {key} IN (SELECT {key}"  # noqa: S608
                f" FROM {table.name} WHERE expires_at < ? ORDER BY expires_at LIMIT ?)",
                (self._dialect.time_ceil(before), limit),
            )
            deleted += int(cursor.rowcount)
        return deleted

    def _take(self, table: Table[T], key: str, value: str) -> T | None:
        # One statement: of two processes taking the same row, exactly one gets it
        # back (PostgreSQL's second DELETE waits and then finds it gone).
        rows = self._sql.all(
            f"DELETE FROM {table.name} WHERE {key} = ? RETURNING {table.columns}",  # noqa: S608
            (value,),
        )
        return table.codec(self._dialect).decode(rows[0]) if rows else None
