"""Migration 0012 on a database that single sign-on used before identities were bound:
an account it made (no password, signed in) is bound to the first identity that
claims it and only to that one; an account with a password, or one that never
signed in (a JWKS token's), is a clash. SQLite and PostgreSQL, through the app."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from starlette.testclient import TestClient

from pushcore import build_services
from pushcore.domain.model import Account, Plan
from pushcore.domain.people import Password
from pushcore.storage.migrate import Migration, apply_if_missing, load_migrations
from pushcore.storage.sql.dialect import Sql
from pushcore.storage.sql.transaction import Transaction
from pushcore.storage.sqlite.dialect import SQLITE
from pushcore_http import create_app
from tests.fakes.oidc_provider import FakeProvider, ProviderTls
from tests.http.conftest import BASE
from tests.http.test_oidc import Browser, fragment, sso_settings

if TYPE_CHECKING:
    from tests.pg import Cluster

IDENTITIES = 12


def before_identities(kind: str) -> list[Migration]:
    """Every migration of ``kind`` before the identities' one."""
    return [m for m in load_migrations(kind) if m.version < IDENTITIES]


OldDatabase = tuple[Callable[[], AbstractContextManager[Transaction]], str]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def old_database(request: pytest.FixtureRequest, tmp_path: Path) -> OldDatabase:
    """Writing into a database migrated up to 0011, and its URL."""
    if request.param == "sqlite":
        path = tmp_path / "old.db"

        @contextmanager
        def sqlite_old() -> Iterator[Transaction]:
            conn = sqlite3.connect(path, isolation_level=None)
            try:
                for migration in before_identities("sqlite"):
                    conn.execute("BEGIN")
                    apply_if_missing(Sql(conn, SQLITE, writing=True), migration)
                    conn.execute("COMMIT")
                conn.execute("BEGIN")
                yield Transaction(conn, SQLITE, writing=True)
                conn.execute("COMMIT")
            finally:
                conn.close()

        return sqlite_old, f"sqlite:///{path}"
    import psycopg

    from pushcore.storage.postgres.dialect import POSTGRES
    from pushcore.storage.postgres.store import migrate

    cluster: Cluster = request.getfixturevalue("pg_cluster")
    url = cluster.create_database(template="template0")

    @contextmanager
    def pg_old() -> Iterator[Transaction]:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("SET TIME ZONE 'UTC'")
            migrate(conn, before_identities("postgres"))
            with conn.transaction():
                yield Transaction(conn, POSTGRES, writing=True)

    return pg_old, url


def test_accounts_made_by_single_sign_on_before_are_bound_once_and_only_without_a_password(
    old_database: OldDatabase, tmp_path: Path, tls: ProviderTls, provider: FakeProvider
) -> None:
    write_old, url = old_database
    then = datetime(2026, 1, 5, tzinfo=UTC)
    with write_old() as tx:
        for account in ("carol", "frank", "erin"):
            tx.accounts.add(Account(account, Plan.FREE, then))
        tx.accounts.signed_in("carol", then)  # single sign-on made it, and signed in
        # A stranger signed frank up, then the real frank's single sign-on went in too.
        tx.passwords.set(Password("frank", "$argon2id$stranger", then))
        tx.accounts.signed_in("frank", then)
        # erin: a JWKS token's account, never signed in here.
    built = build_services(sso_settings(tmp_path / "data", tls, provider.issuer, database_url=url))
    try:
        with TestClient(create_app(built, run_engine=False), follow_redirects=False) as client:
            browser = Browser(client, tls)

            def sign_in_as(sub: str, claim: str) -> str:
                provider.user.update(sub=sub, preferred_username=claim)
                return browser.sign_in()

            landed = sign_in_as("carol-sub", "carol")
            answer = browser.exchange(fragment(landed, "signin"))
            assert answer.json()["account"]["id"] == "carol"
            # Bound now: another identity naming it is a clash; carol's own still signs in.
            assert sign_in_as("someone-else", "carol") == BASE + "/app/#signin-error=account_exists"
            assert "#signin=" in sign_in_as("carol-sub", "carol")
            assert sign_in_as("frank-sub", "frank") == BASE + "/app/#signin-error=account_exists"
            assert sign_in_as("erin-sub", "erin") == BASE + "/app/#signin-error=account_exists"
    finally:
        built.close()
