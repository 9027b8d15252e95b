"""Accounts: created on first use, on the free plan; plans set by the operator."""

from __future__ import annotations

from pushcore.domain.model import Account, Plan
from pushcore.ports import Clock, Store


class AccountService:
    """Use cases on accounts."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self._store = store
        self._clock = clock

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
