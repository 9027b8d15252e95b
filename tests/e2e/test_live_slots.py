"""End to end: open live channels against a real `pushctl serve` (API.md, "People-side limits").

A stop with channels open ends them at once and exits within 5 s; channels
never take the connection slots that /healthz, sign-in and the API need; a
channel whose client reads nothing is closed.
"""

from __future__ import annotations

import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.e2e.server import Server
from tests.e2e.test_delivery import iso
from tests.live.sse import Listener

pytestmark = pytest.mark.slow


def listen(server: Server, headers: dict[str, str]) -> Listener:
    listener = Listener(f"{server.base}/api/inbox/events", headers)
    assert listener.opened.wait(10)
    assert listener.status == 200
    return listener


def test_sigterm_with_a_channel_open_ends_it_at_once_and_exits_within_5_s(tmp_path: Path) -> None:
    server = Server(tmp_path / "data")
    server.start()
    try:
        listener = listen(server, server.user("alice"))
        assert server.process is not None
        started = time.monotonic()
        server.process.terminate()
        code = server.process.wait(15)
        took = time.monotonic() - started
        assert listener.ended.wait(1)
    finally:
        server.stop()
    # uvicorn re-raises the signal once it has stopped cleanly.
    assert code in (0, -signal.SIGTERM), server.log.read_text()
    assert took < 5, f"took {took:.1f} s to exit"


PASSWORD = "a long passphrase of the owner"


def create_account(server: Server, account: str) -> None:
    """An account with a password, made with `pushctl accounts create` (server stopped)."""
    command = [sys.executable, "-m", "pushcore_cli.main", "--data-dir", str(server.data_dir)]
    done = subprocess.run(
        [*command, "accounts", "create", account, "--password-stdin"],
        input=PASSWORD + "\n",
        env=server.env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def few_files() -> None:
    """In the server's process: 300 open files at most (soft and hard), so the connection
    bound it derives (75) is within the test's reach."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (300, 300))


def wait_for(condition: Callable[[], bool], timeout: float = 15) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def test_with_every_channel_slot_full_healthz_and_sign_in_answer_and_the_longest_idle_goes(
    tmp_path: Path,
) -> None:
    server = Server(tmp_path / "data", env={"PUSHCORE_RATE_LIMIT": "0"})
    server.preexec_fn = few_files
    server.data_dir.mkdir(parents=True)
    create_account(server, "alice")
    server.start()
    try:
        users = {name: server.user(name) for name in ("a", "b", "c", "d")}
        channels = {"a": [listen(server, users["a"]) for _ in range(20)]}
        channels["b"] = [listen(server, users["b"]) for _ in range(20)]
        key = server.key("a")

        def event_for_a(count: int) -> None:
            # Due now, not after the default 5 s delay: the order of activity is the point.
            body = {"title": f"a{count}", "scheduledAt": iso(datetime.now(UTC))}
            sent = server.request("POST", "/api/notifications", json=body, headers=key)
            assert sent.status_code == 201, sent.text
            assert wait_for(lambda: all(len(c.events) == count for c in channels["a"]))

        # a's channels get events: b's, then c's, are the longest idle.
        event_for_a(1)
        channels["c"] = [listen(server, users["c"]) for _ in range(20)]
        event_for_a(2)
        # 80 channels: past the 75 connections 300 files allow.
        channels["d"] = [listen(server, users["d"]) for _ in range(20)]

        started = time.monotonic()
        health = server.request("GET", "/healthz")
        healthz_took = time.monotonic() - started
        started = time.monotonic()
        login = server.request(
            "POST", "/api/auth/login", json={"account": "alice", "password": PASSWORD}
        )
        login_took = time.monotonic() - started
        assert health.status_code == 200, health.text
        assert login.status_code == 200, login.text
        assert healthz_took < 1
        assert login_took < 2
        # The bound (56) closed the longest idle: b's, then c's first, never a's.
        assert wait_for(lambda: all(c.ended.is_set() for c in channels["b"]))
        assert channels["c"][0].ended.is_set()
        assert not channels["c"][-1].ended.is_set()
        assert not any(c.ended.is_set() for c in channels["a"] + channels["d"])
    finally:
        server.stop()


def test_a_channel_whose_client_reads_nothing_is_closed(tmp_path: Path) -> None:
    server = Server(
        tmp_path / "data", env={"PUSHCORE_RATE_LIMIT": "0", "PUSHCORE_HTTP_WRITE_TIMEOUT": "1s"}
    )
    server.start()
    try:
        user = server.user("alice")
        reader = socket.socket()
        # A small receive window: the server's buffers fill after a few events.
        reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        reader.connect(("127.0.0.1", server.port))
        head = (
            f"GET /api/inbox/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: {user['Authorization']}\r\n\r\n"
        )
        reader.sendall(head.encode())

        def open_channels() -> float:
            text = server.request("GET", "/metrics").text
            for line in text.splitlines():
                if line.startswith("pushcore_live_channels "):
                    return float(line.split()[1])
            return -1

        assert wait_for(lambda: open_channels() == 1)
        key = server.key("alice")
        body = "x" * 2000
        for batch in range(20):
            now = iso(datetime.now(UTC))  # due now, not after the default 5 s delay
            notifications = [
                {"title": f"n{batch}-{i}", "body": body, "scheduledAt": now} for i in range(100)
            ]
            sent = server.request(
                "POST",
                "/api/notifications/batch",
                json={"notifications": notifications},
                headers=key,
            )
            assert sent.status_code in (200, 201, 207), sent.text
        # It never reads: closed a write timeout after the server's buffers filled.
        assert wait_for(lambda: open_channels() == 0, timeout=30)
        reader.close()
    finally:
        server.stop()
