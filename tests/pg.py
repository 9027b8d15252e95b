"""A throwaway PostgreSQL cluster for the tests: initdb into a temporary directory, start, stop.

The tests never use a server of the machine's: they start their own from
Debian's server binaries (``/usr/lib/postgresql/<version>/bin``), listening
only on a Unix socket inside the cluster's directory, with durability off
(nothing here must survive a crash). initdb refuses to run as root, so when
the tests run as root the cluster belongs to the ``postgres`` system user.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import psycopg

from pushcore.storage.postgres import PostgresStore
from pushcore.storage.records import TABLES

BIN_GLOB = "/usr/lib/postgresql/*/bin"
TEMPLATE = "pushcore_template"
MISSING = (
    "PostgreSQL server binaries (initdb, pg_ctl) were not found under "
    f"{BIN_GLOB} or $PUSHCORE_TEST_PG_BIN: install Debian's postgresql package "
    "(apt-get install -y postgresql; .ci/run does this when it is missing)"
)


def find_bin_dir() -> Path | None:
    """The newest server's bin directory (or $PUSHCORE_TEST_PG_BIN), if there is one."""
    configured = os.environ.get("PUSHCORE_TEST_PG_BIN")
    candidates = [Path(configured)] if configured else sorted(Path("/").glob(BIN_GLOB[1:]))

    def version(path: Path) -> tuple[int, ...]:
        digits = path.parent.name.split(".")
        return tuple(int(d) for d in digits if d.isdigit())

    found = [c for c in candidates if (c / "initdb").is_file() and (c / "pg_ctl").is_file()]
    return max(found, key=version) if found else None


class Cluster:
    """A PostgreSQL server of the test session's own, reached over a Unix socket."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="pushcore-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self._names = itertools.count(1)
        # initdb refuses root; the server then runs as the postgres system user.
        self._user: pwd.struct_passwd | None = None
        if os.geteuid() == 0:
            self._user = pwd.getpwnam("postgres")
            os.chown(self.root, self._user.pw_uid, self._user.pw_gid)

    def _run(self, program: str, *args: str) -> None:
        command = [str(self.bin_dir / program), *args]
        if self._user is not None:
            command = ["runuser", "-u", self._user.pw_name, "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            log = self.log.read_text() if self.log.exists() else ""
            raise RuntimeError(f"{program} failed: {result.stdout}{result.stderr}{log}")

    def start(self) -> None:
        """initdb and start; then a migrated template database for fresh test databases."""
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", "--no-sync")
        self.resume()
        self.create_database(TEMPLATE, template="template0")
        PostgresStore(self.url(TEMPLATE)).close()  # migrated once; copies start migrated

    def resume(self) -> None:
        """Start the server on the existing data directory (after :meth:`halt`)."""
        options = " ".join(
            [
                "-c listen_addresses=''",  # the socket only: no port to collide with
                f"-k {self.root}",
                "-p 5432",
                "-c fsync=off",
                "-c synchronous_commit=off",
                "-c full_page_writes=off",
                "-c max_connections=200",
            ]
        )
        self._run("pg_ctl", "start", "-w", "-D", str(self.data), "-l", str(self.log), "-o", options)

    def halt(self) -> None:
        """Stop the server as an operator would (fast: sessions are ended), keeping its data."""
        self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "fast", "-w")

    def processes(self) -> list[int]:
        """The postmaster and its children (backends and helpers)."""
        postmaster = int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])
        found = Path(f"/proc/{postmaster}/task/{postmaster}/children").read_text().split()
        return [postmaster, *(int(pid) for pid in found)]

    def freeze(self) -> list[int]:
        """SIGSTOP the server's processes: it keeps its sockets but answers nothing; the pids."""
        pids = self.processes()
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        return pids

    def thaw(self, pids: Sequence[int]) -> None:
        """SIGCONT what :meth:`freeze` stopped."""
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    def stop(self) -> None:
        """Stop the server (immediate: nothing to keep) and remove its directory."""
        with contextlib.suppress(RuntimeError):
            self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "immediate", "-w")
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        """A ``postgresql://`` URL of ``database`` on this cluster."""
        return f"postgresql://postgres@/{database}?host={self.root}&port=5432"

    def admin(self, *statements: str) -> None:
        """Run statements outside a transaction (CREATE DATABASE cannot run in one)."""
        with psycopg.connect(self.url(), autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement.encode())

    def create_database(self, name: str | None = None, template: str = TEMPLATE) -> str:
        """A new database, a copy of ``template`` (migrated, empty by default); its URL."""
        name = name or f"test_{os.getpid()}_{next(self._names)}"
        self.admin(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        return self.url(name)

    def empty(self, url: str, tables: Sequence[str] = TABLES) -> None:
        """Remove every row of ``tables`` in the database at ``url``."""
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"TRUNCATE {', '.join(tables)}".encode())
