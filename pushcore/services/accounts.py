"""Accounts: created on first use, on the free plan; plans set by the operator."""

from __future__ import annotations

import attrs

from pushcore.domain.model import Account, Plan
from pushcore.ports import Clock, Store


@attrs.define(slots=False, eq=False, repr=False)
class AccountService:
    """Use cases on accounts."""

    _store: Store
    _clock: Clock

    def ensure(self, account_id: str) -> Account:
        """The account, created on the free plan if it has never been seen."""
        with self._store.read() as tx:
            found = tx.accounts.get(account_id)
        if found is not None:
            return found
        with self._store.transaction() as tx:
            return tx.accounts.ensure(Account(account_id, Plan.FREE, self._clock.now()))

    def set_plan(self, account_id: str, plan: Plan) -> Account:
        """Change the plan, creating the account if needed."""
        with self._store.transaction() as tx:
            return tx.accounts.set_plan(account_id, plan, self._clock.now())
