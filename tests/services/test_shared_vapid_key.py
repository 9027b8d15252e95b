"""Every process on one database signs Web Push with one VAPID key pair: a process whose
data directory holds another pair does not start (API.md: Web Push; a browser
subscription is bound to the key it was made with)."""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from pushcore import build_services, load_settings
from pushcore.domain.errors import ConfigError
from pushcore.runtime.datadir import VAPID_KEY_FILE
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


def test_every_data_directory_on_one_database_gets_the_first_ones_pair(
    tmp_path: Path, database: Callable[[], str]
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"

    shared = public_key_of(first, database())

    assert public_key_of(second, database()) == shared
    assert (second / VAPID_KEY_FILE).read_bytes() == (first / VAPID_KEY_FILE).read_bytes()
    assert stat.S_IMODE((second / VAPID_KEY_FILE).stat().st_mode) == 0o600


def test_a_data_directory_holding_another_pair_is_refused_at_start(
    tmp_path: Path, database: Callable[[], str]
) -> None:
    first, other = tmp_path / "first", tmp_path / "other"
    shared = public_key_of(first, database())
    public_key_of(other, f"sqlite:///{tmp_path / 'elsewhere.db'}")  # its own pair

    with pytest.raises(ConfigError) as refused:
        public_key_of(other, database())

    assert str(refused.value).startswith(
        f"PUSHCORE_DATA_DIR: {other / VAPID_KEY_FILE} holds another VAPID key pair"
    )
    # Moved away, as the message says: the database's pair is adopted.
    (other / VAPID_KEY_FILE).rename(tmp_path / "old.pem")
    assert public_key_of(other, database()) == shared
