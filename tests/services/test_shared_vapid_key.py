"""Every process on one database signs Web Push with one VAPID key pair: a process whose
data directory holds another pair does not start (API.md: Web Push; a browser
subscription is bound to the key it was made with)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pushcore import build_services, load_settings
from pushcore.domain.errors import ConfigError
from pushcore.gateways.vapid import VAPID_KEY_FILE
from tests.pg import Cluster


def public_key_of(data_dir: Path, database_url: str) -> str:
    services = build_services(
        load_settings(env={"PUSHCORE_DATABASE_URL": database_url}, data_dir=data_dir)
    )
    try:
        return services.vapid_public_key
    finally:
        services.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], str]:
    if request.param == "sqlite":
        return lambda: f"sqlite:///{tmp_path / 'shared.db'}"
    cluster: Cluster = request.getfixturevalue("pg_cluster")
    url = cluster.create_database()
    return lambda: url


def test_a_second_data_directory_with_its_own_key_pair_is_refused_at_start(
    tmp_path: Path, database: Callable[[], str]
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    shared = public_key_of(first, database())

    with pytest.raises(ConfigError) as refused:
        public_key_of(second, database())

    assert str(refused.value).startswith("PUSHCORE_DATA_DIR: the VAPID key pair in")
    assert f"copy {VAPID_KEY_FILE}" in str(refused.value)
    # Copying the first server's key file, as the message says, lets it start.
    shutil.copy(first / VAPID_KEY_FILE, second / VAPID_KEY_FILE)
    assert public_key_of(second, database()) == shared
    assert public_key_of(first, database()) == shared
