"""pushctl serve end to end: a real server process, a token from pushctl, keys over HTTP."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

STARTUP_TIMEOUT = 20.0
SHUTDOWN_TIMEOUT = 10.0


def pushctl(data_dir: Path, *args: str) -> list[str]:
    """The command line of pushctl run by this interpreter (so the venv's packages are used)."""
    return [sys.executable, "-m", "pushcore_cli.main", "--data-dir", str(data_dir), *args]


def clean_env() -> dict[str, str]:
    """This environment without the developer's own PUSHCORE_* settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PUSHCORE_")}


def free_port() -> int:
    """A port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_until_healthy(base_url: str, server: subprocess.Popen[bytes], log: Path) -> None:
    """Poll /healthz until it answers 200; fail early if the server dies."""
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"server exited with {server.returncode}:\n{log.read_text()}")
        try:
            if httpx.get(f"{base_url}/healthz", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    pytest.fail(f"server not healthy after {STARTUP_TIMEOUT}s:\n{log.read_text()}")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    """``pushctl serve`` on a free port; yields its base URL, process and log file."""
    port = free_port()
    log = tmp_path / "server.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            pushctl(tmp_path, "serve", "--port", str(port)),
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=clean_env(),
        )
    try:
        yield f"http://127.0.0.1:{port}", process, log
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.slow
def test_serve_token_and_keys_end_to_end(
    tmp_path: Path, server: tuple[str, subprocess.Popen[bytes], Path]
) -> None:
    base_url, process, log = server
    wait_until_healthy(base_url, process, log)
    said = log.read_text()
    assert f"serving on {base_url}" in said
    # A newcomer learns where the app, the docs and the data are from the first lines.
    assert f"the app:      {base_url}/app/" in said
    assert f"the API docs: {base_url}/docs" in said
    assert f"the database: SQLite, {(tmp_path / 'pushcore.db').resolve()}" in said

    issued = subprocess.run(
        pushctl(tmp_path, "token", "issue", "alice"),
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=30,
        check=True,
    )
    headers = {"Authorization": f"Bearer {issued.stdout.strip()}"}

    with httpx.Client(base_url=base_url, headers=headers, timeout=10.0) as client:
        created = client.post("/api/keys", json={"name": "e2e", "scopes": ["devices:read"]})
        assert created.status_code == 201, created.text
        secret = created.json()["key"]

        listed = client.get("/api/keys")
        assert listed.status_code == 200, listed.text
        [item] = listed.json()
        assert item["id"] == created.json()["id"]
        assert item["keyPrefix"] == secret[:12]
        assert secret not in listed.text

    process.send_signal(signal.SIGTERM)
    # uvicorn shuts down gracefully, then re-raises the signal it caught.
    assert process.wait(timeout=SHUTDOWN_TIMEOUT) in (0, -signal.SIGTERM)


@pytest.mark.slow
def test_serve_takes_the_data_dir_after_its_name(tmp_path: Path) -> None:
    port = free_port()
    data_dir = tmp_path / "elsewhere"
    log = tmp_path / "server.log"
    command = [sys.executable, "-m", "pushcore_cli.main", "serve", "--data-dir", str(data_dir)]
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [*command, "--port", str(port)],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=clean_env(),
            cwd=tmp_path,
        )
    try:
        wait_until_healthy(f"http://127.0.0.1:{port}", process, log)
        assert (data_dir / "pushcore.db").is_file()
        assert not (tmp_path / "data").exists()
        assert f"pushctl: created a new data directory at {data_dir}" in log.read_text()
    finally:
        process.terminate()
        process.wait(SHUTDOWN_TIMEOUT)


@pytest.mark.slow
def test_serve_on_a_busy_port_fails_before_saying_it_serves(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]

        result = subprocess.run(
            pushctl(tmp_path / "data", "serve", "--port", str(port)),
            capture_output=True,
            text=True,
            env=clean_env(),
            timeout=30,
            check=False,
        )

    assert result.returncode == 1
    assert f"error: cannot listen on http://127.0.0.1:{port}: address already in use" in (
        result.stderr
    )
    assert "serving on" not in result.stderr + result.stdout
    # Nothing started: no engine, no database, no data directory.
    assert "delivery engine started" not in result.stderr
    assert not (tmp_path / "data").exists()


def test_the_database_is_shown_without_its_password(tmp_path: Path) -> None:
    from pushcore.config import load_settings
    from pushcore_cli.commands.serve import shown_database

    url = "postgresql://pushcore:s3cret@db.example:5432/pushcore"
    settings = load_settings(env={"PUSHCORE_DATABASE_URL": url}, data_dir=tmp_path)

    assert shown_database(settings) == "postgresql://pushcore:***@db.example:5432/pushcore"


@pytest.mark.parametrize("command", [["serve", "--port", "0"], ["worker"]])
def test_a_data_directory_holding_another_vapid_pair_stops_the_start(
    tmp_path: Path, command: list[str]
) -> None:
    # The key pair is settled at a server's start (a local send never reads it):
    # this one's data directory holds another pair than the shared database's.
    from pushcore import build_services, load_settings

    shared = f"sqlite:///{tmp_path / 'shared.db'}"
    for data_dir, database in ((tmp_path / "first", shared), (tmp_path / "other", None)):
        env = {} if database is None else {"PUSHCORE_DATABASE_URL": database}
        services = build_services(load_settings(env=env, data_dir=data_dir))
        services.vapid_key()
        services.close()

    started = subprocess.run(
        pushctl(tmp_path / "other", "--database-url", shared, *command),
        check=False,
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=60,
    )

    assert started.returncode == 1
    said = " ".join(started.stderr.replace("│", " ").split())
    assert f"{tmp_path / 'other' / 'vapid-private.pem'} holds another VAPID key pair" in said
    assert "Traceback" not in started.stderr
    assert "serving on" not in started.stdout + started.stderr
