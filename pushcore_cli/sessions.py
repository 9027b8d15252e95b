"""pushctl's saved sign-ins: one per server URL, in the user's config directory.

``pushctl login --url URL ACCOUNT`` keeps the session's tokens here, so later
``pushctl --url URL ...`` commands need no token, and commands given neither
``--url`` nor ``--account`` (nor a data directory) work on that server. The file holds secrets: it
is made with mode 0600 in a 0700 directory and rewritten atomically.

A refresh token is single-use, and two pushctl processes may hold the same one
(a ``listen`` running while a ``send`` renews). Renewing therefore happens under
an exclusive lock on the file, and a process first adopts what another one
already saved instead of spending its own, already spent, token.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import typer

if TYPE_CHECKING:
    from pushcore.client import Session, Tokens

FILE_NAME = "sessions.json"
CURRENT = "@current"
"""The key of the server the last ``pushctl login`` signed in to (the others are URLs)."""


def config_dir() -> Path:
    """The user's config directory for pushctl (``$XDG_CONFIG_HOME/pushcore`` on Linux)."""
    return Path(typer.get_app_dir("pushcore"))


def server_key(url: str) -> str:
    """The key a server's session is saved under: its URL without a trailing slash."""
    return url.rstrip("/")


class SessionFile:
    """The saved sessions, by server URL."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory if directory is not None else config_dir()
        self.path = self.directory / FILE_NAME
        self._threads = threading.Lock()

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text("utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            return {}  # unreadable: as if signed out; login writes it anew
        return data if isinstance(data, dict) else {}

    def _write(self, data: dict[str, Any]) -> None:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        # Created 0600 before a byte of it is written: no moment where others may read it.
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2)
        os.replace(temporary, self.path)

    def load(self, url: str) -> Tokens | None:
        """The tokens saved for the server at ``url``, if any."""
        entry = self._read().get(server_key(url))
        if not isinstance(entry, dict):
            return None
        from pushcore.client import Tokens

        try:
            return Tokens(**entry)
        except TypeError:
            return None

    def save(self, url: str, tokens: Tokens, *, current: bool = False) -> None:
        """Keep ``tokens`` for the server at ``url`` (``current``: also as the server that
        commands without --url work on)."""
        data = self._read()
        data[server_key(url)] = attrs.asdict(tokens)
        if current:
            data[CURRENT] = server_key(url)
        self._write(data)

    def remove(self, url: str) -> Tokens | None:
        """Forget the session of the server at ``url``; the tokens it had, if any."""
        data = self._read()
        entry = data.pop(server_key(url), None)
        if entry is None:
            return None
        if data.get(CURRENT) == server_key(url):
            del data[CURRENT]
        self._write(data)
        from pushcore.client import Tokens

        return Tokens(**entry) if isinstance(entry, dict) else None

    def current(self) -> str | None:
        """The server of the last ``pushctl login`` while its session is kept, if any."""
        data = self._read()
        url = data.get(CURRENT)
        return url if isinstance(url, str) and isinstance(data.get(url), dict) else None

    def servers(self) -> list[str]:
        """The URLs with a saved session."""
        return sorted(key for key in self._read() if key != CURRENT)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Exclusive among this process's threads and every other pushctl process."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        with self._threads:
            fd = os.open(self.directory / (FILE_NAME + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)  # closing releases the flock

    def session(self, url: str) -> Session | None:
        """The saved session of ``url`` as a client session that keeps this file current."""
        tokens = self.load(url)
        if tokens is None:
            return None
        from pushcore.client import Session

        return Session(
            tokens,
            on_change=lambda new: self.save(url, new),
            latest=lambda: self.load(url),
            exclusive=self.locked,
        )
