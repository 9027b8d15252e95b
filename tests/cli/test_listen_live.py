"""pushctl listen (the default): a live device following the live channel, in local mode
over the data directory and with --url; removed again on exit."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from pushcore.converter import format_timestamp
from tests.cli.conftest import Cli
from tests.cli.test_listen import WAIT, Child, children, free_port, pushctl

pytestmark = pytest.mark.slow
__all__ = ["children"]  # the fixture of test_listen.py, used here too


def live_devices(cli: Cli, account: str = "bob") -> list[dict[str, Any]]:
    """The account's live devices, through pushctl."""
    result = cli(f"devices list --account {account} --json")
    assert result.exit_code == 0, result.output
    return [d for d in json.loads(result.stdout) if d["platform"] == "live"]


def started_device(listener: Child) -> str:
    listening = listener.wait_for_stderr("Listening on the live channel")
    [device_id] = [word for word in listening.split() if word.startswith("dev_")]
    return device_id


def send_soon(cli: Cli) -> dict[str, Any]:
    at = format_timestamp(datetime.now(UTC) + timedelta(seconds=1))
    sent = cli("send hello --account bob --body world --json --at", at)
    assert sent.exit_code == 0, sent.output
    created: dict[str, Any] = json.loads(sent.stdout)
    assert created["devicesTargeted"] == 1  # the live device
    return created


def finished(listener: Child, server: Child) -> None:
    try:
        code = listener.process.wait(WAIT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"listener waits:\n{listener.err.read_text()}\n{server.err.read_text()}")
    assert code == 0, listener.err.read_text()


def test_local_listen_prints_a_delivery_from_serve_and_removes_its_device(
    tmp_path: Path, data_dir: Path, cli: Cli, children: list[Child]
) -> None:
    server = Child(tmp_path, "serve", pushctl(data_dir, "serve", "--port", str(free_port())))
    listener = Child(
        tmp_path, "listen", pushctl(data_dir, "listen", "--account", "bob", "--once", "--json")
    )
    children += [server, listener]
    device_id = started_device(listener)
    assert [d["id"] for d in live_devices(cli)] == [device_id]
    created = send_soon(cli)
    finished(listener, server)
    [line] = listener.out.read_text().splitlines()
    entry = json.loads(line)
    assert entry["notificationId"] == created["id"]
    assert (entry["title"], entry["body"]) == ("hello", "world")
    assert entry["id"].startswith("inb_")
    assert live_devices(cli) == []
    shown = cli("notifications show --account bob --json", created["id"])
    assert json.loads(shown.stdout)["status"] == "DELIVERED"


def test_listen_with_url_follows_the_server_s_channel(
    tmp_path: Path, data_dir: Path, cli: Cli, children: list[Child]
) -> None:
    port = free_port()
    server = Child(tmp_path, "serve", pushctl(data_dir, "serve", "--port", str(port)))
    children.append(server)
    token = cli("token issue bob").stdout.strip()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + WAIT
    while cli(f"--url {url} --token {token} devices list").exit_code != 0:
        assert time.monotonic() < deadline, server.err.read_text()
        time.sleep(0.2)
    remote = ["--url", url, "--token", token, "listen", "--once"]
    listener = Child(tmp_path, "listen", pushctl(data_dir, *remote))
    children.append(listener)
    started_device(listener)
    send_soon(cli)
    finished(listener, server)
    assert "hello — world" in listener.out.read_text()
    assert live_devices(cli) == []


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_a_stop_signal_removes_the_live_device_and_exits_0(
    tmp_path: Path, data_dir: Path, cli: Cli, children: list[Child], stop: signal.Signals
) -> None:
    listener = Child(tmp_path, "listen", pushctl(data_dir, "listen", "--account", "bob"))
    children.append(listener)
    device_id = started_device(listener)
    time.sleep(0.5)  # following the channel by now
    listener.process.send_signal(stop)
    assert listener.process.wait(WAIT) == 0, listener.err.read_text()
    assert f"Removed device {device_id}." in listener.err.read_text()
    assert "Traceback" not in listener.err.read_text()
    assert "destroyed" not in listener.err.read_text()
    assert live_devices(cli) == []
