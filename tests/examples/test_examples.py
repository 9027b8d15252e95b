"""Every program in examples/ runs against a real server and prints what it promises.

Each example runs as a user would run it (``python examples/x.py``, settings
in the environment), and the test checks both its output and what the
server stored or the receiver got, so the examples cannot rot.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import httpx
import pytest

from pushcore import build_services, load_settings
from tests.client.conftest import Account, new_account
from tests.e2e.server import Server
from tests.fakes.receiver import Receiver

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(example: str, env: Mapping[str, str], *args: str) -> list[str]:
    """Run ``examples/<example>`` as a user would; its stdout lines (it must exit 0)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PUSHCORE_")}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / example), *args],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def remote(server: Server, account: Account, **more: str) -> dict[str, str]:
    return {"PUSHCORE_URL": server.base, "PUSHCORE_API_KEY": account.api_key, **more}


def api(server: Server, account: Account, path: str) -> httpx.Response:
    response = server.request("GET", path, headers={"X-API-Key": account.api_key})
    assert response.status_code == 200, response.text
    return response


def test_send_with_client(server: Server, account: Account, receiver: Receiver) -> None:
    server.webhook({"X-API-Key": account.api_key}, receiver.url("/phone"))
    lines = run("send_with_client.py", remote(server, account), "Backup finished", "42 GB")
    assert lines[0] == "queued 'Backup finished' for 1 device(s)"
    match = re.fullmatch(r"id (ntf_\w+)", lines[1])
    assert match is not None
    assert lines[2:] == ["DELIVERED: 1 delivered, 0 failed"]
    stored = api(server, account, f"/api/notifications/{match[1]}").json()
    assert (stored["title"], stored["body"], stored["metadata"]) == (
        "Backup finished",
        "42 GB",
        {"from": "script"},
    )
    [delivered] = receiver.delivered("/phone")
    assert delivered.body["notificationId"] == match[1]


def test_async_client(server: Server, account: Account) -> None:
    lines = run("async_client.py", remote(server, account))
    assert lines == [
        "scheduled 3 reminders for in an hour",
        "queued: Review the release, Rotate the keys, Stand-up",
        "cancelled 3",
        "cancelling again: 409 not_cancellable",
        "account: 3 cancelled of 3",
    ]
    items = api(server, account, "/api/notifications").json()["items"]
    assert sorted(n["status"] for n in items) == ["CANCELLED"] * 3


def test_stream(server: Server, account: Account, receiver: Receiver) -> None:
    subscriber = new_account(server)
    env = remote(server, account, PUSHCORE_TOKEN=subscriber.token)
    lines = run("stream.py", env, receiver.url("/subscriber"))
    code = re.fullmatch(r"code ([a-z]+-[a-z0-9]{4})", lines[1])
    assert code is not None
    assert lines[0] == "publisher: created stream 'Deploys'"
    assert lines[2:] == [
        "subscriber: found 'Deploys', subscribed: False",
        "subscriber: subscribed to 'Deploys'",
        "publisher: sent to 1 device(s) of 1 subscriber(s)",
    ]
    [stream] = api(server, account, "/api/streams").json()
    assert (stream["code"], stream["subscribers"]) == (code[1], 1)
    assert receiver.wait_for(1, path="/subscriber")
    payload = receiver.delivered("/subscriber")[0].body
    assert payload["title"] == "v2.4.0 is live"
    assert payload["stream"] == {"name": "Deploys", "code": code[1]}


def test_stream_reaches_a_listener_without_a_webhook(server: Server, account: Account) -> None:
    subscriber = new_account(server)
    # What `pushctl listen` registers: a live device of the subscriber.
    server.request(
        "POST",
        "/api/devices",
        json={"platform": "live", "token": "listen-1"},
        headers={"Authorization": f"Bearer {subscriber.token}"},
    )
    lines = run("stream.py", remote(server, account, PUSHCORE_TOKEN=subscriber.token))
    assert lines[-1] == "publisher: sent to 1 device(s) of 1 subscriber(s)"
    inbox = server.request(
        "GET", "/api/inbox", headers={"Authorization": f"Bearer {subscriber.token}"}
    )
    assert [e["title"] for e in inbox.json()["items"]] == ["v2.4.0 is live"]


def test_stream_leaves_nothing_behind_when_a_step_fails(server: Server, account: Account) -> None:
    env = remote(server, account, PUSHCORE_TOKEN="not-a-token")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PUSHCORE_")}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "stream.py")],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    assert done.returncode == 1
    assert "stopped, nothing left behind: Invalid token" in done.stderr
    assert api(server, account, "/api/streams").json() == []


def test_schedule_in_process(tmp_path: Path, receiver: Receiver) -> None:
    data_dir = tmp_path / "data"
    env = {"PUSHCORE_DATA_DIR": str(data_dir), "PUSHCORE_ALLOW_PRIVATE_NETWORKS": "true"}
    lines = run("schedule_in_process.py", env, receiver.url("/hook"))
    assert lines == [
        "registered the webhook device",
        "scheduled 'Backup finished' for in 2 s: QUEUED",
        "DELIVERED: 1 delivered, 0 failed",
    ]
    [delivered] = receiver.delivered("/hook")
    assert delivered.body["title"] == "Backup finished"
    services = build_services(load_settings(env={}, data_dir=data_dir))
    try:
        page = services.notifications.list("example", None, 10, None)
    finally:
        services.close()
    assert [(n.title, n.status) for n in page.items] == [("Backup finished", "DELIVERED")]


def test_webhook_receiver_checks_signatures(server: Server, account: Account) -> None:
    lines = run("webhook_receiver.py", remote(server, account))
    assert lines[0].startswith("registered http://127.0.0.1:")
    assert lines[1:] == [
        "refused a POST without a valid signature: 401",
        "verified 'Signed and delivered' (webhook-id dlv_...)",
    ]
    # It removed its device again.
    devices = server.request("GET", "/api/devices", headers={"X-API-Key": account.api_key})
    assert [d for d in devices.json() if d["name"] == "signed receiver"] == []
