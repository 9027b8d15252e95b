"""Starting pushcore for the benchmarks the way its users run it, on SQLite or PostgreSQL.

    from benchmarks.processes import Deployment, postgres
    with postgres() as pg, Deployment(data_dir, pg.fresh(), engine=False, workers=2) as d:
        ...  # d.urls: the API processes; d.cpu_window(): the cores each process used

Not a command of its own: the benchmarks (scheduling, fanout, apns, ingest,
postgres) use it. Processes are `pushctl serve` (``--no-engine`` for the API
alone) and `pushctl worker`, started as ``python -m pushcore_cli.main`` with
this interpreter, with only the PUSHCORE_* settings given here:
private-network webhooks allowed, log level warning, and rate limiting off
(``PUSHCORE_RATE_LIMIT=0``: the benchmarks drive one account far past any
limit; a benchmark may set it back, as fairness does). On PostgreSQL every
process gets ``--database-url`` and shares one data directory (its JWT
secret). :func:`postgres` starts a throwaway cluster (tests/pg.py: initdb in a
temporary directory, a Unix socket only, durability off: ``fsync``,
``synchronous_commit`` and ``full_page_writes`` off), or uses a server you
name, creating a fresh database for every run.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from pushcore import Settings, load_settings

ROOT = Path(__file__).resolve().parent.parent
# What every process the benchmarks start gets, unless a benchmark says otherwise.
BASE_SETTINGS = {
    "PUSHCORE_ALLOW_PRIVATE_NETWORKS": "true",
    "PUSHCORE_LOG_LEVEL": "warning",
    # Throughput benchmarks drive one account far past any rate limit.
    "PUSHCORE_RATE_LIMIT": "0",
}


def rss_mb(pid: int) -> float:
    """Resident memory of a process, in MB (VmRSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main_thread_seconds(pid: int) -> float:
    """User + system CPU time of a process's main thread alone (where uvicorn runs the
    event loop), from /proc."""
    fields = Path(f"/proc/{pid}/task/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    """The direct children of a process (of its main thread), from /proc."""
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except FileNotFoundError:
        return []


def machine_jiffies() -> tuple[int, int]:
    """(busy, total) jiffies of all cores since boot, from /proc/stat."""
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


class CpuWindow:
    """Cores each named group of processes used between construction and :meth:`stop`.

    The groups' pids are read again at the end (PostgreSQL's backends come and
    go); a process that ended meanwhile counts for nothing. ``machine`` is how
    many of the machine's cores were busy, whoever used them (another user's
    work included): near ``os.cpu_count()``, the cores were the bound.

    ``main_threads`` names groups whose main threads are counted apart too, as
    ``"<name> loop"``: in an API process that is the event loop, and the rest of
    the group's cores are its other threads (the group writer's, mostly).
    """

    def __init__(self, groups: Mapping[str, Any], main_threads: Sequence[str] = ()) -> None:
        # Values: a callable returning pids (read at both ends) or a list of pids.
        self._groups = dict(groups)
        self._main_threads = [name for name in main_threads if name in self._groups]
        self._started = time.monotonic()
        self._machine = machine_jiffies()
        self._before = {name: self._cpu(name) for name in self._groups}
        self._before_main = {
            name: self._cpu(name, main_thread_seconds) for name in self._main_threads
        }

    def _pids(self, name: str) -> list[int]:
        source = self._groups[name]
        pids: list[int] = source() if callable(source) else list(source)
        return pids

    def _cpu(self, name: str, seconds: Callable[[int], float] = cpu_seconds) -> dict[int, float]:
        found = {}
        for pid in self._pids(name):
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                found[pid] = seconds(pid)
        return found

    def stop(self) -> dict[str, float]:
        """Cores used per group over the window (1.0: one core all the time), and machine."""
        wall = time.monotonic() - self._started
        busy, total = machine_jiffies()
        used: dict[str, float] = {}
        for name in self._groups:
            after = self._cpu(name)
            before = self._before[name]
            used[name] = sum(t - before.get(pid, 0.0) for pid, t in after.items()) / wall
        for name in self._main_threads:
            after, before = self._cpu(name, main_thread_seconds), self._before_main[name]
            used[f"{name} loop"] = sum(t - before.get(p, 0.0) for p, t in after.items()) / wall
        cores = os.cpu_count() or 1
        used["machine"] = (busy - self._machine[0]) / max(1, total - self._machine[1]) * cores
        return used


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def process_env(settings: Mapping[str, str] | None = None) -> dict[str, str]:
    """This environment without its PUSHCORE_* settings, plus the base and ``settings``."""
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("PUSHCORE_")},
        **BASE_SETTINGS,
        **(settings or {}),
    }


def pushctl(data_dir: Path, database_url: str | None = None) -> list[str]:
    """The command line of `pushctl` on ``data_dir`` (and the database at ``database_url``)."""
    command = [sys.executable, "-m", "pushcore_cli.main", "--data-dir", str(data_dir)]
    return [*command, "--database-url", database_url] if database_url else command


def library_settings(
    data_dir: Path, database_url: str | None = None, env: Mapping[str, str] | None = None
) -> Settings:
    """Settings for the library in the benchmark's own process, on the services' database."""
    where = {"PUSHCORE_DATABASE_URL": database_url} if database_url else {}
    return load_settings(
        env={"PUSHCORE_ALLOW_PRIVATE_NETWORKS": "true", **where, **(env or {})}, data_dir=data_dir
    )


def _output(log: Path | None) -> IO[bytes] | int:
    return log.open("ab") if log is not None else subprocess.DEVNULL


def start_server(
    data_dir: Path,
    port: int,
    settings: Mapping[str, str] | None = None,
    *,
    database_url: str | None = None,
    engine: bool = True,
    cwd: Path | None = None,
    log: Path | None = None,
    workers: int = 1,
) -> subprocess.Popen[bytes]:
    """`pushctl serve` (``--no-engine`` unless ``engine``; ``--workers`` when ``workers`` > 1)
    on ``data_dir``, answering /healthz.

    ``cwd``: run the pushcore of another source tree (`python -m` puts it first
    on sys.path). ``log``: where its stdout and stderr go (default: nowhere).
    """
    out = _output(log)
    command = [*pushctl(data_dir, database_url), "serve", "--port", str(port)]
    command += [] if workers == 1 else ["--workers", str(workers)]
    process = subprocess.Popen(
        [*command, *([] if engine else ["--no-engine"])],
        env=process_env(settings),
        stdout=out,
        stderr=subprocess.STDOUT if log is not None else subprocess.DEVNULL,
        cwd=cwd,
    )
    if not isinstance(out, int):
        out.close()
    for _ in range(300):
        if process.poll() is not None:
            raise RuntimeError(f"pushctl serve exited ({process.returncode}); see {log}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=0.5).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.1)
    stop_server(process)
    raise RuntimeError("server did not start")


def start_worker(
    data_dir: Path,
    log: Path,
    settings: Mapping[str, str] | None = None,
    *,
    database_url: str | None = None,
    cwd: Path | None = None,
) -> subprocess.Popen[bytes]:
    """`pushctl worker` on ``data_dir``, once it says it is delivering (in ``log``)."""
    start = log.stat().st_size if log.exists() else 0
    with log.open("ab") as out:
        process = subprocess.Popen(
            [*pushctl(data_dir, database_url), "worker"],
            env=process_env(settings),
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=cwd,
        )
    for _ in range(300):
        if process.poll() is not None:
            raise RuntimeError(f"pushctl worker exited ({process.returncode}); see {log}")
        if b"worker delivering" in log.read_bytes()[start:]:
            return process
        time.sleep(0.1)
    stop_server(process)
    raise RuntimeError("worker did not start")


def stop_server(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, and wait for the process to end (it finishes in-flight work first)."""
    process.terminate()
    process.wait(30)


def log_problems(log: Path) -> list[str]:
    """Lines of a process's log that say something went wrong (an error, a traceback)."""
    if not log.exists():
        return []
    lines = log.read_text(errors="replace").splitlines()
    return [line for line in lines if "ERROR" in line or "Traceback" in line]


class Deployment:
    """API processes and workers on one database, as a user would run them.

    ``apis`` `pushctl serve` processes (each on its own port, each of
    ``serve_workers`` processes: ``--workers``), delivering too when ``engine``,
    else ``--no-engine``; and ``workers`` `pushctl worker` processes. All share
    ``data_dir`` (the JWT secret; the SQLite file when ``database_url`` is
    None). Logs go to ``data_dir/logs``; :meth:`stop` fails on any error in them
    unless told not to check.
    """

    def __init__(
        self,
        data_dir: Path,
        database_url: str | None = None,
        *,
        apis: int = 1,
        engine: bool = True,
        workers: int = 0,
        settings: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        serve_workers: int = 1,
    ) -> None:
        self.data_dir = data_dir
        self.serve_workers = serve_workers  # processes of each `pushctl serve` (--workers)
        self.database_url = database_url
        self.apis = apis
        self.engine = engine
        self.workers = workers
        self.settings = dict(settings or {})
        self.cwd = cwd
        self.servers: list[subprocess.Popen[bytes]] = []
        self.worker_processes: list[subprocess.Popen[bytes]] = []
        self.ports: list[int] = []
        self.logs: list[Path] = []

    @property
    def urls(self) -> list[str]:
        """The base URL of each API process."""
        return [f"http://127.0.0.1:{port}" for port in self.ports]

    @property
    def url(self) -> str:
        """The first API process's base URL."""
        return self.urls[0]

    def describe(self) -> str:
        """What runs, for the reports: e.g. "2 `serve --no-engine` + 1 `worker`"."""
        api = "`pushctl serve`" if self.engine else "`pushctl serve --no-engine`"
        if self.serve_workers > 1:
            api = api.replace("serve", f"serve --workers {self.serve_workers}")
        parts = [api if self.apis == 1 else f"{self.apis} {api}"]
        if self.workers:
            parts.append(f"{self.workers} `pushctl worker`")
        return " + ".join(parts)

    def start(self) -> Deployment:
        """Start the API processes, then the workers; each is ready when this returns."""
        logs = self.data_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        try:
            for n in range(1, self.apis + 1):
                port = free_port()
                log = logs / f"serve-{n}.log"
                self.logs.append(log)
                self.servers.append(
                    start_server(
                        self.data_dir,
                        port,
                        self.settings,
                        database_url=self.database_url,
                        engine=self.engine,
                        cwd=self.cwd,
                        log=log,
                        workers=self.serve_workers,
                    )
                )
                self.ports.append(port)
            for n in range(1, self.workers + 1):
                log = logs / f"worker-{n}.log"
                self.logs.append(log)
                self.worker_processes.append(
                    start_worker(
                        self.data_dir,
                        log,
                        self.settings,
                        database_url=self.database_url,
                        cwd=self.cwd,
                    )
                )
        except BaseException:
            self.stop(check=False)
            raise
        return self

    def pids(self) -> dict[str, list[int]]:
        """Each process's pid, by name: serve-1, serve-2, worker-1, ..."""
        # With --workers, a serve's CPU is its workers' (forked children) too.
        named = {f"serve-{n}": [p.pid, *children(p.pid)] for n, p in enumerate(self.servers, 1)}
        named.update({f"worker-{n}": [p.pid] for n, p in enumerate(self.worker_processes, 1)})
        return named

    def cpu_window(self, extra: Mapping[str, Any] | None = None) -> CpuWindow:
        """A :class:`CpuWindow` over this deployment's processes (and ``extra`` groups)."""
        return CpuWindow({**self.pids(), **(extra or {})})

    def problems(self) -> list[str]:
        """Errors and tracebacks the processes logged, prefixed with the log's name."""
        return [f"{log.stem}: {line}" for log in self.logs for line in log_problems(log)]

    def stop(self, check: bool = True) -> None:
        """Stop every process (workers first); then, if ``check``, fail on logged errors."""
        for process in [*self.worker_processes, *self.servers]:
            with contextlib.suppress(Exception):
                stop_server(process)
        self.worker_processes.clear()
        self.servers.clear()
        problems = self.problems()
        if check and problems:
            raise RuntimeError("errors logged:\n" + "\n".join(problems[:20]))

    def __enter__(self) -> Deployment:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop(check=kind is None)


class Postgres:
    """Where the benchmarks' PostgreSQL databases come from.

    Either a throwaway cluster of tests/pg.py (``cluster``) or a server you
    name (``admin_url``, a role that may CREATE DATABASE). Each run gets a
    fresh database (:meth:`fresh`), dropped when the context of
    :func:`postgres` ends.
    """

    def __init__(self, cluster: Any = None, admin_url: str | None = None) -> None:
        self.cluster = cluster  # tests.pg.Cluster (imported late: it needs psycopg)
        self.admin_url = admin_url
        self._names = itertools.count(1)
        self.created: list[str] = []

    def describe(self) -> str:
        """One line for the reports."""
        if self.cluster is None:
            return "the PostgreSQL server named by --database-url"
        return (
            f"a throwaway PostgreSQL {self.version()} cluster (tests/pg.py: Unix socket,"
            " fsync, synchronous_commit and full_page_writes off, tuned for benchmarking"
            " rather than durability)"
        )

    def version(self) -> str:
        """The server's version, e.g. 15.8."""
        import psycopg

        with psycopg.connect(self._admin()) as conn:
            row = conn.execute("SHOW server_version").fetchone()
        return str(row[0]).split()[0] if row else "?"

    def _admin(self) -> str:
        if self.cluster is not None:
            url: str = self.cluster.url()
            return url
        assert self.admin_url is not None
        return self.admin_url

    def url_of(self, name: str) -> str:
        """The URL of database ``name`` on this server."""
        if self.cluster is not None:
            url: str = self.cluster.url(name)
            return url
        parts = urlsplit(self._admin())
        return urlunsplit(parts._replace(path=f"/{name}"))

    def fresh(self, template: str | None = None) -> str:
        """A new database's URL: a copy of ``template`` (default: migrated and empty on
        the throwaway cluster, empty on a named server; pushcore migrates it at start)."""
        import psycopg

        name = f"bench_{os.getpid()}_{next(self._names)}"
        template = template or ("pushcore_template" if self.cluster is not None else "template0")
        with psycopg.connect(self._admin(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"'.encode())
        self.created.append(name)
        return self.url_of(name)

    def name_of(self, url: str) -> str:
        """The database name in a URL this object gave."""
        return urlsplit(url).path.lstrip("/")

    def server_pids(self) -> list[int]:
        """The postmaster and its children (backends and helpers); none for a named server."""
        if self.cluster is None:
            return []
        pid_file = Path(self.cluster.data) / "postmaster.pid"
        postmaster = int(pid_file.read_text().split("\n", 1)[0])
        return [postmaster, *children(postmaster)]

    def drop_all(self) -> None:
        """Drop the databases this object created (on a named server; a cluster just goes)."""
        import psycopg

        if self.cluster is not None:
            return
        with psycopg.connect(self._admin(), autocommit=True) as conn:
            for name in self.created:
                with contextlib.suppress(psycopg.Error):
                    conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())


@contextlib.contextmanager
def postgres(database_url: str | None = None) -> Iterator[Postgres]:
    """A :class:`Postgres`: on the server at ``database_url``, or a throwaway cluster."""
    if database_url is not None:
        pg = Postgres(admin_url=database_url)
        try:
            yield pg
        finally:
            pg.drop_all()
        return
    from tests.pg import MISSING, Cluster, find_bin_dir

    bin_dir = find_bin_dir()
    if bin_dir is None:
        raise RuntimeError(MISSING)
    cluster = Cluster(bin_dir)
    try:
        cluster.start()
        yield Postgres(cluster=cluster)
    finally:
        cluster.stop()


def key_with_webhook(base: str, token: str, hook: str, name: str) -> str:
    """Register a webhook device at ``hook`` for the token's account; a new API key of it
    (notifications read and write)."""
    bearer = {"Authorization": f"Bearer {token}"}
    device = {"token": hook, "platform": "webhook"}
    httpx.post(f"{base}/api/devices", json=device, headers=bearer).raise_for_status()
    answer = httpx.post(
        f"{base}/api/keys",
        json={"name": name, "scopes": ["notifications:write", "notifications:read"]},
        headers=bearer,
    )
    answer.raise_for_status()
    key: str = answer.json()["key"]
    return key
