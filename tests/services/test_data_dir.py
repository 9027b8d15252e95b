"""The data directory is readable by its owner only: directory 0700, files 0600.

For a new directory, and for one an older version left open (0755, 0644),
which is tightened at start with a warning naming each path.
"""

from __future__ import annotations

import logging
import os
import stat
from datetime import timedelta
from pathlib import Path

import pytest

from pushcore import Services, build_services, load_settings
from pushcore.domain.inputs import NewApiKey
from pushcore.domain.scopes import Scope

FILES = [
    "pushcore.db",
    "pushcore.db-wal",
    "pushcore.db-shm",
    "pushcore.db-writer",
    "jwt-secret",
    "vapid-private.pem",
]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def start(data_dir: Path) -> Services:
    """Services on ``data_dir`` that wrote to the database, so that every file pushcore
    keeps there exists (the WAL and its index too, until the last one closes)."""
    services = build_services(load_settings(env={}, data_dir=data_dir))
    services.accounts.ensure("alice")
    services.keys.create("alice", NewApiKey(name="k", scopes=(Scope.DEVICES_READ,)))
    services.tokens.issue("alice", timedelta(minutes=1))
    services.vapid_key()  # made on first use, as a server's start does
    return services


def assert_private(data_dir: Path) -> None:
    assert {p.name for p in data_dir.iterdir()} >= set(FILES)
    for name in FILES:
        assert mode(data_dir / name) == 0o600, name
    assert mode(data_dir) == 0o700


def run_once(data_dir: Path) -> None:
    """Start, check every file is private, stop."""
    services = start(data_dir)
    try:
        assert_private(data_dir)
    finally:
        services.close()


def test_a_new_data_directory_is_private(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # Even under a permissive umask: the modes are pushcore's, not the umask's.
    old = os.umask(0o002)
    try:
        with caplog.at_level(logging.WARNING, logger="pushcore"):
            run_once(tmp_path / "new" / "data")
    finally:
        os.umask(old)
    assert not [r for r in caplog.records if "open to other users" in r.getMessage()]


def test_an_open_data_directory_is_tightened_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data_dir = tmp_path / "data"
    # Another process (a running server) keeps the WAL and its index in being.
    running = start(data_dir)
    try:
        # As older versions left it: every file pushcore keeps readable by all.
        data_dir.chmod(0o755)
        for name in FILES:
            (data_dir / name).chmod(0o644)
        with caplog.at_level(logging.WARNING, logger="pushcore"):
            run_once(data_dir)
    finally:
        running.close()
    warned = {r.getMessage().split(" was open to other users")[0] for r in caplog.records}
    assert warned >= {str(data_dir), *(str(data_dir / name) for name in FILES)}
    assert "(mode 0644): tightened to 0600" in caplog.text
    assert "(mode 0755): tightened to 0700" in caplog.text


def test_an_unrelated_file_in_the_data_directory_is_left_alone(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o700)
    notes = data_dir / "notes.txt"
    notes.write_text("mine")
    notes.chmod(0o644)
    run_once(data_dir)
    assert mode(notes) == 0o644
