"""People with passwords: accounts made by the operator or by sign-up, and sign-in.

The operator's calls (pushctl) are synchronous; those of the HTTP API are
coroutines, because they hash: the hash runs on the password pool and the
database calls on worker threads, so the event loop never waits for either.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import TypeVar

import attrs
from anyio import to_thread

from pushcore.domain.errors import (
    AccountExists,
    FieldError,
    NotFound,
    SignupDisabled,
    Unauthorized,
    ValidationError,
)
from pushcore.domain.model import Account, Plan
from pushcore.domain.people import Password, check_password, local_account_id
from pushcore.ports import Clock, Store, Transaction
from pushcore.services.passwords import PasswordHashing
from pushcore.services.sessions import Session, SessionService

T = TypeVar("T")

BAD_SIGN_IN = "Invalid account or password"


@attrs.frozen
class AccountSummary:
    """An account as the operator lists it."""

    account: Account
    has_password: bool


def _field(name: str, check: Callable[[str], str], value: str) -> str:
    try:
        return check(value)
    except ValueError as exc:
        raise ValidationError([FieldError(name, str(exc))]) from None


@attrs.define(slots=False, eq=False, repr=False)
class PeopleService:
    """Accounts with passwords, and signing them in."""

    _store: Store
    _clock: Clock
    _passwords: PasswordHashing
    _sessions: SessionService
    signup: bool

    # The operator's (pushctl accounts) -------------------------------------------------

    def create(self, account: str, plan: Plan, password: str) -> Account:
        """A new account made here (its id lowercased) with a password; AccountExists
        when the id is taken, ValidationError naming ``account`` or ``password``."""
        account_id = _field("account", local_account_id, account)
        hashed = self._passwords.hash(_field("password", check_password, password))
        with self._store.transaction() as tx:
            return self._add(tx, account_id, plan, hashed)

    def set_password(self, account: str, password: str) -> Account:
        """Give an existing account a (new) password and sign all its sessions out."""
        _field("password", check_password, password)
        with self._store.read() as tx:
            found = self._existing(tx, account)
        if found is None:
            raise NotFound(f"No account {account!r}")
        hashed = self._passwords.hash(password)
        with self._store.transaction() as tx:
            ended = self._replace(tx, found.id, hashed)
        self._sessions.signed_out(ended)
        return found

    def list(self) -> Sequence[AccountSummary]:
        """Every account, by id, with whether it has a password."""
        with self._store.read() as tx:
            holders = set(tx.passwords.holders())
            return [AccountSummary(a, a.id in holders) for a in tx.accounts.list()]

    # The API's (they hash: coroutines) ---------------------------------------------------

    async def sign_in(self, account: str, password: str) -> Session:
        """A session for the account's password; Unauthorized(BAD_SIGN_IN) for an
        unknown account, one without a password and a wrong password alike, after a
        hash in each case (the same work, the same time)."""
        account_id, stored = await to_thread.run_sync(self._credentials, account)
        if not await self._passwords.verify_async(stored, password) or account_id is None:
            raise Unauthorized(BAD_SIGN_IN)
        rehashed = None
        if stored is not None and self._passwords.needs_rehash(stored):
            rehashed = await self._passwords.hash_async(password)
        return await to_thread.run_sync(self._start, account_id, stored, rehashed)

    async def sign_up(self, account: str, password: str) -> Session:
        """A new account with a password, signed in; SignupDisabled unless
        PUSHCORE_SIGNUP is on, AccountExists when the id is taken."""
        if not self.signup:
            raise SignupDisabled("Sign-up is disabled on this server")
        account_id = _field("account", local_account_id, account)
        hashed = await self._passwords.hash_async(_field("password", check_password, password))
        return await to_thread.run_sync(self._create_and_start, account_id, hashed)

    async def change_password(self, account_id: str, current: str, new: str) -> None:
        """Replace the account's password, given its current one (a 400 naming
        ``currentPassword`` when it does not match); every session is signed out."""
        stored = await to_thread.run_sync(self._password_of, account_id)
        if not await self._passwords.verify_async(stored, current):
            raise ValidationError([FieldError("currentPassword", "is not the account's password")])
        hashed = await self._passwords.hash_async(_field("newPassword", check_password, new))
        ended = await to_thread.run_sync(
            self._in_transaction, lambda tx: self._replace(tx, account_id, hashed)
        )
        self._sessions.signed_out(ended)

    # Helpers ----------------------------------------------------------------------------

    def _add(self, tx: Transaction, account_id: str, plan: Plan, hashed: str) -> Account:
        account = Account(account_id, plan, self._clock.now())
        try:
            # An id a provider's identity is bound to stays that identity's, even if
            # its account row were gone: a password on it would be a second way in.
            if tx.sign_ins.is_bound(account_id):
                raise KeyError(account_id)
            tx.accounts.add(account)
        except KeyError:
            raise AccountExists(f"An account {account_id!r} exists already") from None
        tx.passwords.set(Password(account_id, hashed, account.created_at))
        return account

    def _replace(self, tx: Transaction, account_id: str, hashed: str) -> Collection[str]:
        # Every session ends with the old password: the sessions' ids, once committed.
        tx.passwords.set(Password(account_id, hashed, self._clock.now()))
        return self._sessions.revoke_all(account_id, tx)

    @staticmethod
    def _existing(tx: Transaction, account: str) -> Account | None:
        # As given first: ids from identity providers keep their case.
        for candidate in dict.fromkeys((account, account.lower())):
            found = tx.accounts.get(candidate)
            if found is not None:
                return found
        return None

    def _credentials(self, account: str) -> tuple[str | None, str | None]:
        with self._store.read() as tx:
            for candidate in dict.fromkeys((account, account.lower())):
                found = tx.passwords.get(candidate)
                if found is not None:
                    return candidate, found.hash
        return None, None

    def _password_of(self, account_id: str) -> str | None:
        with self._store.read() as tx:
            found = tx.passwords.get(account_id)
        return None if found is None else found.hash

    def _in_transaction(self, work: Callable[[Transaction], T]) -> T:
        with self._store.transaction() as tx:
            return work(tx)

    def _start(self, account_id: str, stored: str | None, rehashed: str | None) -> Session:
        with self._store.transaction() as tx:
            # Today's parameters, unless the password changed since it was checked.
            current = tx.passwords.get(account_id)
            if rehashed is not None and current is not None and current.hash == stored:
                tx.passwords.set(attrs.evolve(current, hash=rehashed))
            return self._sessions.start(account_id, tx)

    def _create_and_start(self, account_id: str, hashed: str) -> Session:
        with self._store.transaction() as tx:
            self._add(tx, account_id, Plan.FREE, hashed)
            return self._sessions.start(account_id, tx)
