"""End to end: `pushctl serve --workers 2`, one port served by two processes.

Requests are sent to one worker or the other on a kept-alive connection whose
worker /readyz named (the engine's worker reports its scheduler, the other
does not). Creates go through both, and a live channel is held by the worker
without the engine: every notification reaches the webhook exactly once, the
channel gets every entry the other process's engine wrote, and a read made
through the other worker; a create due at once through the worker without
the engine wakes it. Then the command is stopped, by SIGTERM on SQLite and by
SIGKILL (the kernel's parent-death signal) on PostgreSQL: no worker is left
running.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
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


def connected(server: Server, engine: bool) -> httpx.Client:
    """A client whose open connection is served by the engine's worker (or the other):
    new connections until /readyz answers from the one wanted. Use it at once (the
    connection is kept alive 5 s)."""
    deadline = time.monotonic() + 30
    while True:
        client = httpx.Client(base_url=server.base, timeout=30)
        if ("scheduler" in client.get("/readyz").json()["checks"]) == engine:
            return client
        client.close()
        assert time.monotonic() < deadline, "no connection reached the worker wanted"


@contextmanager
def via(server: Server, engine: bool) -> Iterator[httpx.Client]:
    """:func:`connected`, closed when the block ends."""
    client = connected(server, engine)
    try:
        yield client
    finally:
        client.close()


def create(client: httpx.Client, key: dict[str, str], body: dict[str, str]) -> str:
    created = client.post("/api/notifications", json=body, headers=key)
    assert created.status_code == 201, created.text
    notification_id: str = created.json()["id"]
    return notification_id


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
            worker_pids(server, 2)
            assert "with the delivery engine" in server.log.read_text()
            user, key = server.user("alice"), server.key("alice")
            server.webhook(key, receiver.url("/a"))
            server.request(
                "POST", "/api/devices", json={"platform": "live", "token": "t"}, headers=key
            )
            # The channel, held by the worker without the engine.
            held = connected(server, engine=False)  # the channel closes it
            channel = Listener(f"{server.base}/api/inbox/events", user, client=held)
            assert channel.opened.wait(10)
            assert channel.status == 200
            due = iso(datetime.now(UTC) + timedelta(seconds=3))
            ids: list[str] = []
            for engine in (True, False):
                with via(server, engine) as client:
                    ids += [
                        create(client, key, {"title": f"{engine} {i}", "scheduledAt": due})
                        for i in range(5)
                    ]
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
            with via(server, engine=True) as client:
                read = client.post("/api/inbox/read", json={"upTo": newest}, headers=user)
                assert read.status_code == 200, read.text
            assert channel.wait_for(
                lambda events: [e.data["unread"] for e in events if e.event == "read"] == [0], 10
            )
            channel.close()
            # Due at once, created through the worker without the engine: it wakes the
            # engine's worker (whose next tick is up to 30 s away).
            with via(server, engine=False) as client:
                create(client, key, {"title": "now", "scheduledAt": iso(datetime.now(UTC))})
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
