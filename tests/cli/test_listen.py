"""pushctl listen --webhook: a local webhook device that prints what arrives and removes
itself on exit (the live channel's listen: test_listen_live.py)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import Result

from pushcore.converter import format_timestamp
from pushcore.domain.webhooks import signature_headers
from pushcore_cli.commands.listen import describe
from tests.cli.conftest import Cli, OpenServices

WAIT = 20.0  # every wait on another thread or process is bounded by this
FORGER = "whsec_" + "A" * 32  # a secret that is not the device's

PAYLOAD: dict[str, Any] = {
    "notificationId": "ntf_01JD0000000000000000000000",
    "title": "Build passed",
    "body": "main is green",
    "iconStyle": "bolt",
    "sound": "default",
    "priority": "normal",
    "metadata": {"job": "42"},
    "sender": {"name": "CI", "icon": None},
    "stream": None,
    "scheduledAt": "2026-11-21T10:15:30.123Z",
    "expiresAt": None,
}


def webhook_devices(cli: Cli, account: str = "bob") -> list[dict[str, Any]]:
    """The account's webhook devices, through pushctl."""
    result = cli(f"devices list --account {account} --json")
    assert result.exit_code == 0, result.output
    return [d for d in json.loads(result.stdout) if d["platform"] == "webhook"]


# --- in-process: the receiver, its output and its clean-up --------------------------------


class Poster(threading.Thread):
    """Waits for the listener's device, then POSTs to it: the bad requests, then ``payload``."""

    def __init__(self, open_services: OpenServices, payload: dict[str, Any]) -> None:
        super().__init__(daemon=True)
        self.open_services = open_services
        self.payload = payload
        self.statuses: dict[str, int] = {}
        self.url: str | None = None
        self.device_name: str | None = None
        self.secret: str | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            services = self.open_services()
            deadline = time.monotonic() + WAIT
            while self.url is None and time.monotonic() < deadline:
                found = [d for d in services.devices.list("bob") if d.platform.value == "webhook"]
                if found:
                    self.url, self.device_name = found[0].token, found[0].name
                    self.secret = found[0].webhook_secret
                time.sleep(0.02)
            assert self.url is not None, "the listener registered no device"
            assert self.secret is not None, "a webhook device is registered with a secret"
            now = int(time.time())

            def signed(body: bytes, secret: str = self.secret) -> dict[str, Any]:
                return {"content": body, "headers": signature_headers(secret, "m1", now, body)}

            body = json.dumps(self.payload).encode()
            with httpx.Client(timeout=5.0) as client:
                post = client.post
                self.statuses["wrong path"] = post(self.url + "x", **signed(b"{}")).status_code
                self.statuses["not json"] = post(self.url, **signed(b"{")).status_code
                self.statuses["not an object"] = post(self.url, **signed(b"[1]")).status_code
                self.statuses["get"] = client.get(self.url).status_code
                self.statuses["unsigned"] = post(self.url, content=body).status_code
                self.statuses["forged"] = post(self.url, **signed(body, FORGER)).status_code
                # Last: with --once, this one ends the listener.
                self.statuses["payload"] = post(self.url, **signed(body)).status_code
        except BaseException as exc:  # reported by the test's main thread
            self.error = exc


def listen_in_process(
    cli: Cli, open_services: OpenServices, options: Sequence[str], payload: dict[str, Any]
) -> tuple[Result, Poster]:
    """Run ``pushctl listen --account bob --once OPTIONS`` here while a thread posts to it."""
    poster = Poster(open_services, payload)
    poster.start()
    try:
        result = cli("listen --webhook --account bob --once", *options)
    finally:
        poster.join(WAIT)
    if poster.error is not None:
        raise poster.error
    return result, poster


@pytest.fixture
def private_networks_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loopback webhook URLs allowed, as local listening needs."""
    monkeypatch.setenv("PUSHCORE_ALLOW_PRIVATE_NETWORKS", "true")


@pytest.mark.usefixtures("private_networks_allowed")
def test_json_prints_each_payload_as_one_line_and_removes_the_device(
    cli: Cli, open_services: OpenServices
) -> None:
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)

    result, poster = listen_in_process(cli, open_services, ["--json"], PAYLOAD)

    assert result.exit_code == 0, result.output
    assert result.stdout == json.dumps(PAYLOAD, separators=(",", ":")) + "\n"
    assert poster.statuses == {
        "wrong path": 404,
        "not json": 400,
        "not an object": 400,
        "get": 501,
        "unsigned": 401,
        "forged": 401,
        "payload": 200,
    }
    first, *rest = result.stderr.splitlines()
    [device_id] = [word for word in first.split() if word.startswith("dev_")]
    assert first.startswith(f"Listening on {poster.url} as webhook device {device_id} of bob")
    assert f"Removed device {device_id}." in rest
    assert webhook_devices(cli) == []
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers


@pytest.mark.usefixtures("private_networks_allowed")
def test_people_get_one_line_per_notification(cli: Cli, open_services: OpenServices) -> None:
    result, _ = listen_in_process(cli, open_services, [], PAYLOAD)

    assert result.exit_code == 0, result.output
    [line] = result.stdout.splitlines()
    assert line.endswith("  Build passed — main is green  (from CI)")


@pytest.mark.usefixtures("private_networks_allowed")
def test_name_and_port_are_used(cli: Cli, open_services: OpenServices) -> None:
    port = free_port()

    result, poster = listen_in_process(
        cli, open_services, ["--name", "laptop", "--port", str(port)], PAYLOAD
    )

    assert result.exit_code == 0, result.output
    assert poster.url is not None
    assert poster.url.startswith(f"http://127.0.0.1:{port}/")
    assert poster.device_name == "laptop"


def test_a_refused_loopback_url_says_how_to_allow_it(cli: Cli) -> None:
    result = cli("listen --webhook --account bob --once")

    assert result.exit_code == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[0].startswith("error: cannot register http://127.0.0.1:")
    assert "private, loopback or link-local" in lines[0]
    assert "PUSHCORE_ALLOW_PRIVATE_NETWORKS=true" in result.stderr
    assert "Traceback" not in result.output
    assert webhook_devices(cli) == []


def test_describe_keeps_one_notification_on_one_line() -> None:
    received = datetime(2026, 11, 21, 10, 15, 30, tzinfo=UTC)
    payload = {
        **PAYLOAD,
        "title": "red\x1b[31m alert",
        "body": "two\nlines",
        "priority": "critical",
        "sender": {"name": "builds", "icon": None},
        "stream": {"name": "builds", "code": "falcon-7k2q"},
    }

    line = describe(payload, received)

    assert line == (
        "10:15:30Z  red [31m alert — two lines  [critical]  (stream builds, code falcon-7k2q)"
    )


def test_describe_leaves_out_what_is_not_there() -> None:
    payload = {**PAYLOAD, "body": "", "sender": None}

    line = describe(payload, datetime(2026, 11, 21, 10, 15, 30, tzinfo=UTC))

    assert line == "10:15:30Z  Build passed"


# --- end to end: real processes -----------------------------------------------------------


def pushctl(data_dir: Path, *args: str) -> list[str]:
    """The command line of pushctl run by this interpreter (so the venv's packages are used)."""
    return [sys.executable, "-m", "pushcore_cli.main", "--data-dir", str(data_dir), *args]


def allowing_env() -> dict[str, str]:
    """This environment without the developer's PUSHCORE_* settings, private networks allowed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUSHCORE_")}
    env["PUSHCORE_ALLOW_PRIVATE_NETWORKS"] = "true"
    return env


def free_port() -> int:
    """A port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Child:
    """A pushctl subprocess with its stdout and stderr in files."""

    def __init__(self, tmp_path: Path, label: str, command: list[str]) -> None:
        self.out = tmp_path / f"{label}.out"
        self.err = tmp_path / f"{label}.err"
        with self.out.open("wb") as out, self.err.open("wb") as err:
            self.process = subprocess.Popen(command, stdout=out, stderr=err, env=allowing_env())

    def wait_for_stderr(self, text: str) -> str:
        """The first stderr line containing ``text``; fails if the process dies or is too slow."""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            for line in self.err.read_text().splitlines():
                if text in line:
                    return line
            if self.process.poll() is not None:
                pytest.fail(f"exited with {self.process.returncode}:\n{self.err.read_text()}")
            time.sleep(0.05)
        pytest.fail(f"no {text!r} on stderr after {WAIT}s:\n{self.err.read_text()}")

    def kill(self) -> None:
        """Kill it if it still runs."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def children(tmp_path: Path) -> Iterator[list[Child]]:
    """Subprocesses started by a test, killed after it whatever happens."""
    started: list[Child] = []
    try:
        yield started
    finally:
        for child in started:
            child.kill()


@pytest.mark.slow
def test_a_delivery_from_serve_reaches_the_listener(
    tmp_path: Path, data_dir: Path, cli: Cli, children: list[Child]
) -> None:
    listener = Child(
        tmp_path,
        "listen",
        pushctl(data_dir, "listen", "--webhook", "--account", "bob", "--once", "--json"),
    )
    children.append(listener)
    listening = listener.wait_for_stderr("Listening on ")
    [device_id] = [word for word in listening.split() if word.startswith("dev_")]
    assert [d["id"] for d in webhook_devices(cli)] == [device_id]
    server = Child(tmp_path, "serve", pushctl(data_dir, "serve", "--port", str(free_port())))
    children.append(server)

    at = format_timestamp(datetime.now(UTC) + timedelta(seconds=1))
    sent = cli("send hello --account bob --body world --metadata k=v --json --at", at)
    assert sent.exit_code == 0, sent.output
    created = json.loads(sent.stdout)
    assert created["devicesTargeted"] == 1

    try:
        code = listener.process.wait(WAIT)
    except subprocess.TimeoutExpired:
        pytest.fail(
            f"listener still waiting after {WAIT}s:\n{listener.err.read_text()}\n"
            f"server:\n{server.err.read_text()}"
        )
    assert code == 0, listener.err.read_text()
    [line] = listener.out.read_text().splitlines()
    payload = json.loads(line)
    assert payload["notificationId"] == created["id"]
    assert payload["title"] == "hello"
    assert payload["body"] == "world"
    assert payload["metadata"] == {"k": "v"}
    assert f"Removed device {device_id}." in listener.err.read_text()
    assert webhook_devices(cli) == []

    deadline = time.monotonic() + WAIT
    status = None
    while time.monotonic() < deadline and status != "DELIVERED":
        shown = cli("notifications show --account bob --json", created["id"])
        status = json.loads(shown.stdout)["status"]
        time.sleep(0.1)
    assert status == "DELIVERED"


@pytest.mark.slow
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_a_stop_signal_removes_the_device_and_exits_0(
    tmp_path: Path, data_dir: Path, cli: Cli, children: list[Child], stop: signal.Signals
) -> None:
    listener = Child(
        tmp_path, "listen", pushctl(data_dir, "listen", "--webhook", "--account", "bob")
    )
    children.append(listener)
    listening = listener.wait_for_stderr("Listening on ")
    [device_id] = [word for word in listening.split() if word.startswith("dev_")]
    assert [d["id"] for d in webhook_devices(cli)] == [device_id]

    listener.process.send_signal(stop)

    assert listener.process.wait(WAIT) == 0, listener.err.read_text()
    assert f"Removed device {device_id}." in listener.err.read_text()
    assert "Traceback" not in listener.err.read_text()
    assert webhook_devices(cli) == []
