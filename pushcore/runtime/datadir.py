"""A private data directory: the directory 0700, every file pushcore keeps in it 0600.

They hold device tokens, webhook URLs, Web Push keys and the JWT secret, so no
other local user may read them. Done once at the composition root, before the
store opens, so that it holds for every store and for directories made by
older versions (which left 0755 and 0644): those are tightened, with a warning
naming the path.

SQLite gives its ``-wal``, ``-shm`` and ``-journal`` files the mode of the
database file, so creating that file 0600 before SQLite does is what keeps
them private. If the store comes to create other files of its own, it must
create them 0600 (as it does ``-writer``) and name them in STORE_SUFFIXES.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from collections.abc import Iterable
from pathlib import Path

log = logging.getLogger("pushcore")

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
VAPID_KEY_FILE = "vapid-private.pem"
"""The VAPID key pair kept in the data directory (pushcore.gateways.vapid)."""
STORE_SUFFIXES = ("", "-wal", "-shm", "-journal", "-writer")
"""The files of a SQLite store at ``<db>``: ``<db><suffix>``."""


def sqlite_path(database_url: str) -> Path | None:
    """The database file of a ``sqlite:///`` URL; None for any other store."""
    if database_url.startswith("sqlite:///"):
        return Path(database_url.removeprefix("sqlite:///"))
    return None


def secure_data_dir(data_dir: Path, database: Path | None, names: Iterable[str]) -> None:
    """Make ``data_dir`` (0700) or tighten it; create the SQLite file ``database`` (0600)
    when missing; tighten it, its companions and ``names`` in ``data_dir`` to 0600."""
    _private_dir(data_dir)
    files = [data_dir / name for name in names]
    if database is not None:
        if not database.parent.exists():
            _private_dir(database.parent)
        # An existing database (or one another process just made) is kept as it is.
        with contextlib.suppress(FileExistsError):
            os.close(os.open(database, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE))
        files += [Path(f"{database}{suffix}") for suffix in STORE_SUFFIXES]
    for path in files:
        _tighten(path, PRIVATE_FILE)


def _private_dir(path: Path) -> None:
    if not path.exists():
        path.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    _tighten(path, PRIVATE_DIR)


def _tighten(path: Path, mode: int) -> None:
    try:
        current = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return
    if current & ~mode:
        os.chmod(path, current & mode)
        log.warning(
            "%s was open to other users (mode %04o): tightened to %04o",
            path,
            current,
            current & mode,
        )
