"""Run `pushctl serve` as a real process for end-to-end tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

from pushcore import load_settings
from pushcore.bootstrap import build_token_issuer
from tests import forkserver


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Server:
    """A `pushctl serve` subprocess on a loopback port, with a data directory it owns."""

    def __init__(
        self,
        data_dir: Path,
        env: Mapping[str, str] | None = None,
        command: Sequence[str] = ("serve",),
        preexec_fn: Callable[[], None] | None = None,
    ) -> None:
        self.data_dir = data_dir
        # Run in the child before the server starts (e.g. to lower its resource limits).
        self.preexec_fn = preexec_fn
        self.command = list(command)
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("PUSHCORE_")},
            "PUSHCORE_ALLOW_PRIVATE_NETWORKS": "true",
            "PUSHCORE_LOG_LEVEL": "warning",
            **(env or {}),
        }
        self.process: forkserver.Process | None = None
        self.log = data_dir / "server.log"

    def start(self, timeout: float = 20.0) -> None:
        """Start and wait until /healthz answers."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        args = ["--data-dir", str(self.data_dir), *self.command, "--port", str(self.port)]
        self.process = forkserver.start(args, self.env, self.log, preexec_fn=self.preexec_fn)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {self.log.read_text()}")
            try:
                if httpx.get(f"{self.base}/healthz", timeout=0.5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        # Stopped here: the fixture that called start() never reaches its stop(), and a
        # server left running (two after one loaded run) keeps taking CPU from later tests.
        self.stop()
        raise RuntimeError("server did not start")

    @classmethod
    @contextmanager
    def running(cls, data_dir: Path, env: Mapping[str, str] | None = None) -> Iterator[Server]:
        """A started server on ``data_dir``, stopped when the block ends (for fixtures)."""
        server = cls(data_dir, env)
        server.start()
        try:
            yield server
        finally:
            server.stop()

    def start_worker(self, *args: str) -> forkserver.Process:
        """A `pushctl worker` (with ``args``) on the same data directory."""
        return forkserver.start(
            ["--data-dir", str(self.data_dir), "worker", *args], self.env, self.log
        )

    def kill(self) -> None:
        """SIGKILL: no shutdown, no cleanup, as a crash."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> int | None:
        """SIGTERM and wait; the exit code."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        return self.process.returncode

    def hammer(self, api_key: str, connections: int, seconds: float) -> subprocess.Popen[bytes]:
        """An account hammering GET /api/devices from another process (benchmarks/load.py):
        its JSON summary on stdout when it ends."""
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "benchmarks.load",
                f"{self.base}/api/devices",
                api_key,
                "--connections",
                str(connections),
                "--seconds",
                str(seconds),
            ],
            stdout=subprocess.PIPE,
            cwd=Path(__file__).resolve().parents[2],  # benchmarks/ is importable from there
        )

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """An HTTP request to the server."""
        return httpx.request(method, f"{self.base}{path}", timeout=10.0, **kwargs)

    def user(self, account: str) -> dict[str, str]:
        """Bearer headers for ``account``, signed with the server's secret.

        That is PUSHCORE_JWT_SECRET when the server was given one (servers
        sharing a database share it), else the one in the data directory.
        """
        secret = {k: v for k, v in self.env.items() if k == "PUSHCORE_JWT_SECRET"}
        # What `pushctl token issue` signs with: the secret alone, no store or services
        # (building them, a memory store migrated, cost 50 ms of CPU a token).
        self.data_dir.mkdir(parents=True, exist_ok=True)
        issuer = build_token_issuer(load_settings(env=secret, data_dir=self.data_dir))
        token = issuer.issue(account, timedelta(hours=1))
        return {"Authorization": f"Bearer {token}"}

    def key(self, account: str) -> dict[str, str]:
        """X-API-Key headers with every scope for ``account``."""
        scopes = ["notifications:read", "notifications:write", "devices:read", "devices:write"]
        response = self.request(
            "POST", "/api/keys", json={"name": "e2e", "scopes": scopes}, headers=self.user(account)
        )
        assert response.status_code == 201, response.text
        return {"X-API-Key": response.json()["key"]}

    def webhook(self, headers: dict[str, str], url: str) -> str:
        """Register a webhook device; its id."""
        response = self.request(
            "POST", "/api/devices", json={"platform": "webhook", "token": url}, headers=headers
        )
        assert response.status_code in (200, 201), response.text
        device_id: str = response.json()["id"]
        return device_id
