"""End to end: `pushctl serve --workers 2`, one port served by two processes.

Each worker is made to take the creates in turn (the other one stopped with
SIGSTOP, so the shared socket's connections all go to the one left), and a
live channel is opened on the worker without the engine: every notification
reaches the webhook exactly once, the channel gets every entry the other
process's engine wrote, and a read made through the other worker; a create
due at once through the worker without the engine wakes it. Then the
command is stopped, by SIGTERM on SQLite and by SIGKILL (the kernel's
parent-death signal) on PostgreSQL: no worker is left running.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.e2e.server import Server
from tests.e2e.test_delivery import iso
from tests.fakes.receiver import running_receiver
from tests.live.sse import Listener
from tests.pg import Cluster

pytestmark = pytest.mark.slow


def worker_pids(server: Server, count: int) -> list[int]:
    """The workers' pids, as the command's first lines name them (worker 1 first)."""
    deadline = time.monotonic() + 20
    while True:
        found = dict(re.findall(r"worker (\d+): pid (\d+)", server.log.read_text()))
        if len(found) == count:
            return [int(found[str(i + 1)]) for i in range(count)]
        assert time.monotonic() < deadline, server.log.read_text()
        time.sleep(0.1)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, ended and not yet reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.parametrize(
    ("database", "stop"), [("sqlite", signal.SIGTERM), ("postgres", signal.SIGKILL)]
)
def test_two_workers_serve_one_port_deliver_once_and_stop_together(
    tmp_path: Path, request: pytest.FixtureRequest, database: str, stop: signal.Signals
) -> None:
    # A slow tick: only a wake-up gets a notification due at once sent quickly.
    env = {
        "PUSHCORE_JWT_SECRET": secrets.token_urlsafe(32),
        "PUSHCORE_SCHEDULER_TICK_SECONDS": "30",
    }
    if database == "postgres":
        request.applymarker(pytest.mark.postgres)
        cluster: Cluster = request.getfixturevalue("pg_cluster")
        env["PUSHCORE_DATABASE_URL"] = cluster.create_database()
    server = Server(tmp_path / "data", env, command=["serve", "--workers", "2"])
    server.start()
    assert server.process is not None
    with running_receiver() as receiver:
        try:
            engine_worker, api_worker = worker_pids(server, 2)
            assert "with the delivery engine" in server.log.read_text()
            user, key = server.user("alice"), server.key("alice")
            server.webhook(key, receiver.url("/a"))
            server.request(
                "POST", "/api/devices", json={"platform": "live", "token": "t"}, headers=key
            )
            due = datetime.now(UTC) + timedelta(seconds=3)
            ids: list[str] = []
            channel: Listener | None = None
            # Each worker alone takes the connections while the other is stopped.
            for only, paused in ((engine_worker, api_worker), (api_worker, engine_worker)):
                os.kill(paused, signal.SIGSTOP)
                try:
                    for i in range(5):
                        created = server.request(
                            "POST",
                            "/api/notifications",
                            json={"title": f"{only}-{i}", "scheduledAt": iso(due)},
                            headers=key,
                        )
                        assert created.status_code == 201, created.text
                        ids.append(created.json()["id"])
                    if only == api_worker:  # the channel is held by the worker without engine
                        channel = Listener(f"{server.base}/api/inbox/events", user)
                        assert channel.opened.wait(10)
                        assert channel.status == 200
                finally:
                    os.kill(paused, signal.SIGCONT)
            assert channel is not None
            assert receiver.wait_for(len(ids), timeout=30)
            # Every one settled: none can be sent again.
            deadline = time.monotonic() + 15
            while True:
                shown = [
                    server.request("GET", f"/api/notifications/{i}", headers=key).json()
                    for i in ids
                ]
                if all(n["status"] == "DELIVERED" for n in shown):
                    break
                assert time.monotonic() < deadline, [n["status"] for n in shown]
                time.sleep(0.2)
            arrivals = Counter(r.body["notificationId"] for r in receiver.delivered())
            assert arrivals == dict.fromkeys(ids, 1)
            # The engine's process wrote the entries; the other process's channel got them.
            assert channel.wait_for(lambda _: len(channel.notifications()) == len(ids), 15)
            # A read made through the engine's worker reaches it too.
            newest = channel.notifications()[-1].id
            os.kill(api_worker, signal.SIGSTOP)
            try:
                read = server.request(
                    "POST", "/api/inbox/read", json={"upTo": newest}, headers=user
                )
                assert read.status_code == 200, read.text
            finally:
                os.kill(api_worker, signal.SIGCONT)
            assert channel.wait_for(
                lambda events: [e.data["unread"] for e in events if e.event == "read"] == [0], 10
            )
            channel.close()
            # Due at once, created through the worker without the engine: it wakes the
            # engine's worker (its next tick is up to 30 s away).
            os.kill(engine_worker, signal.SIGSTOP)
            try:
                now = server.request(
                    "POST", "/api/notifications", json={"title": "now"}, headers=key
                )
                assert now.status_code == 201, now.text
            finally:
                os.kill(engine_worker, signal.SIGCONT)
            assert receiver.wait_for(len(ids) + 1, timeout=10)
        finally:
            children = worker_pids(server, 2)
            server.process.send_signal(stop)
            code = server.process.wait(20)
            deadline = time.monotonic() + 20
            while any(alive(pid) for pid in children) and time.monotonic() < deadline:
                time.sleep(0.1)
            left = [pid for pid in children if alive(pid)]
            for pid in left:  # not to outlive a failed test
                os.kill(pid, signal.SIGKILL)
            assert left == []
            assert code == (0 if stop == signal.SIGTERM else -signal.SIGKILL)
