"""Shared fixtures: settings in a temporary data dir, services on SQLite, an HTTP client,
and the session's own PostgreSQL cluster for the tests that need one."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from starlette.testclient import TestClient

from pushcore import Services, build_services, load_settings
from pushcore.config import Settings
from pushcore.services import passwords
from pushcore_http import create_app
from tests.fakes.clock import FakeClock

# pytest-xdist's workers set COLUMNS=80, which pushctl's tables honour (output.py): the
# tests read them as a pipe gets them, unfolded, in every process alike.
os.environ.pop("COLUMNS", None)

# Every build_services() and httpx client makes a TLS context, and OpenSSL then parses
# the whole system bundle (~140 roots, 50 ms of CPU each time: a sixth of an in-process
# CLI test). No test reaches a public host: the fake servers' CAs come by
# PUSHCORE_CA_FILE or verify=. So the file named by SSL_CERT_FILE holds one public root;
# the system's hashed certificate directory is still looked up, root by root, as before.
# Set here, over any bundle of the machine's, so that servers the tests start inherit it.
os.environ["SSL_CERT_FILE"] = str(Path(__file__).parent / "fakes" / "one-root.pem")

if TYPE_CHECKING:
    # Imported when a PostgreSQL fixture runs: `-m "not postgres"` needs no psycopg.
    from tests.pg import Cluster


# Hypothesis: CI runs the same examples every time (a red run is reproducible, never a
# coin toss); a developer's runs explore new ones. Neither has a per-example deadline:
# on a shared 2-core machine under xdist an example's time says more about the
# neighbours than about the code (speed is measured in benchmarks/, not in tests).
# HYPOTHESIS_PROFILE picks one by name (e.g. "ci" to replay CI's examples locally).
hypothesis_settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
hypothesis_settings.register_profile("dev", deadline=None)
hypothesis_settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") == "true" else "dev")
)


# Modules whose every test is marked postgres and which import psycopg at the top.
POSTGRES_MODULES = {"test_postgres_specific.py", "test_postgres.py", "test_postgres_outages.py"}


def _psycopg_installed() -> bool:
    try:
        return importlib.util.find_spec("psycopg") is not None
    except ImportError:
        return False


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Skip importing the PostgreSQL-only modules when the run deselects them anyway
    (``-m "not postgres"``) and psycopg is not installed."""
    if collection_path.name not in POSTGRES_MODULES:
        return None
    deselected = "not postgres" in (config.getoption("markexpr") or "")
    return True if deselected and not _psycopg_installed() else None


# tryfirst: xdist's worker reads the xdist_group marks in its own hook of this name,
# registered after this conftest and so called before it (a plain hook here marked the
# tests too late, and every module's server started on both workers, many times over).
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under xdist, keep together the tests that share a module- or package-scoped fixture.

    Such a fixture (a `pushctl serve` subprocess, Playwright's driver and Chromium)
    would otherwise start once on every worker its tests land on; grouped
    (``--dist loadgroup``), it starts once. The browser package is one group: its
    fixtures are package-scoped. Tests with only function- and session-scoped
    fixtures are spread one by one.
    """
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if item.get_closest_marker("xdist_group"):
            continue
        info = getattr(item, "_fixtureinfo", None)  # doctest items have none
        definitions = info.name2fixturedefs if info is not None else {}
        scopes = {d.scope for name in definitions for d in definitions[name]}
        group = None
        if "package" in scopes:
            group = item.path.parent
        elif scopes & {"module", "class"}:
            group = item.path
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(str(group.relative_to(config.rootpath))))


def pytest_configure(config: pytest.Config) -> None:
    """Refuse ``--dist loadgroup`` where xdist would drop the groups without a word (and
    record what each test costs when PUSHCORE_TEST_TIMES names a directory).

    xdist 3.8 sends a group to one worker by the ``@group`` it appends to each test's
    id, which pytest 9.2 no longer lets it change (pytest-xdist#1386): the tests still
    pass, only every module's server starts again on each worker, many times over.
    """
    if os.environ.get("PUSHCORE_TEST_TIMES"):  # benchmarks/testtime.py's record
        from tests.timing import TimingRecorder

        config.pluginmanager.register(TimingRecorder(Path(os.environ["PUSHCORE_TEST_TIMES"])))
    if getattr(config.option, "dist", None) != "loadgroup":
        return
    xdist_version = tuple(
        int(part) for part in importlib.metadata.version("pytest-xdist").split(".")[:2]
    )
    if pytest.version_tuple[:2] >= (9, 2) and xdist_version <= (3, 8):
        raise pytest.UsageError(
            "--dist loadgroup loses its groups with pytest 9.2 and pytest-xdist 3.8 "
            "(pytest-xdist#1386): reinstall the dev extras (pyproject.toml pins pytest below 9.2)"
        )


@pytest.fixture(autouse=True)
def _cheap_password_hashing(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """argon2id at its lowest cost in this process, unless the test is marked
    ``real_password_cost``.

    The product's cost (OWASP's floor, about 20 ms of a core a hash) is the point
    in production and a fifth of the HTTP tests' CPU here; what the tests check
    of a hash (salted, verified, rehashed when its parameters are old) holds at
    any cost. Servers the tests start as processes keep the real cost, and
    tests/services/test_people.py checks it in-process.
    """
    if request.node.get_closest_marker("real_password_cost") is None:
        monkeypatch.setattr(passwords, "TIME_COST", 1)
        monkeypatch.setattr(passwords, "MEMORY_COST_KIB", 64)


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite database with every migration applied, made once per worker.

    Migrating a new database is half of what building the services costs (60 ms
    of CPU, most of an HTTP test's set-up); a copy of this file costs nothing.
    The migrations themselves are tested where a store opens its own file
    (tests/contract/test_*_migration.py, ``memory://`` stores, the CLI's first
    command, the servers the tests start).
    """
    from pushcore.storage.sqlite.store import SqliteStore

    path = tmp_path_factory.mktemp("migrated") / "pushcore.db"
    SqliteStore(path).close()
    return path


def copy_migrated(migrated_sqlite: Path, directory: Path) -> Path:
    """A copy of ``migrated_sqlite`` in ``directory`` (made if missing); the copy's path."""
    directory.mkdir(parents=True, exist_ok=True)
    for source in migrated_sqlite.parent.glob(f"{migrated_sqlite.name}*"):
        if not source.name.endswith("-writer"):  # the lock file: each store makes its own
            shutil.copy2(source, directory / source.name)
    return directory / migrated_sqlite.name


@pytest.fixture
def settings(tmp_path: Path, migrated_sqlite: Path) -> Settings:
    """Embedded defaults (SQLite) in a temporary data directory, its database
    already migrated (a copy of ``migrated_sqlite``).

    PUSHCORE_TEST_DATABASE_URL runs the same tests on another store.
    """
    data_dir = tmp_path / "data"
    database_url = os.environ.get("PUSHCORE_TEST_DATABASE_URL")
    if database_url is None:
        copy_migrated(migrated_sqlite, data_dir)
    return load_settings(env={}, data_dir=data_dir, database_url=database_url)


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    """Services on SQLite with the real clock."""
    built = build_services(settings)
    yield built
    built.close()


@pytest.fixture
def client(services: Services) -> Iterator[TestClient]:
    """An HTTP client for the app built on ``services``."""
    with TestClient(create_app(services), raise_server_exceptions=False) as test_client:
        yield test_client


class Api:
    """Small conveniences for HTTP tests: tokens and keys for named accounts."""

    def __init__(self, client: TestClient, services: Services) -> None:
        self.client = client
        self.services = services

    def token(self, account: str) -> dict[str, str]:
        """Headers carrying a fresh JWT for ``account``."""
        token = self.services.tokens.issue(account, timedelta(hours=1))
        return {"Authorization": f"Bearer {token}"}

    def key(self, account: str, *scopes: str) -> dict[str, str]:
        """Headers carrying a new API key of ``account`` with ``scopes`` (all when none)."""
        wanted = list(scopes) or [
            "notifications:read",
            "notifications:write",
            "devices:read",
            "devices:write",
        ]
        response = self.client.post(
            "/api/keys", json={"name": "test", "scopes": wanted}, headers=self.token(account)
        )
        assert response.status_code == 201, response.text
        return {"X-API-Key": response.json()["key"]}


@pytest.fixture
def api(client: TestClient, services: Services) -> Api:
    """The :class:`Api` helper."""
    return Api(client, services)


@pytest.fixture
def fake_clock() -> FakeClock:
    """A clock that moves only when told."""
    return FakeClock()


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """A PostgreSQL server started for this test session (in a temporary directory).

    Missing server binaries fail the tests that need it, loudly: a skip
    would let CI pass without ever running them.
    """
    from tests.pg import MISSING, Cluster, find_bin_dir

    bin_dir = find_bin_dir()
    if bin_dir is None:
        pytest.fail(MISSING, pytrace=False)
    cluster = Cluster(bin_dir)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
