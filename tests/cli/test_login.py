"""pushctl login / logout: a session kept in the user's config directory, used by --url commands."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import Result

from pushcore_cli.main import app
from tests.cli.runner import CliRunner
from tests.client.test_login import PASSWORD, person, refresh_status
from tests.e2e.server import Server

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with Server.running(tmp_path_factory.mktemp("cli-login") / "data") as s:
        yield s


class Pushctl:
    """pushctl with a config directory of its own, run in-process (tests/cli/runner.py): a
    `pushctl` process is ~0.85 CPU s to start, mostly Typer's command tree, and a run here
    reads and writes the same files (test_login_needs_a_server runs the real entry point)."""

    def __init__(self, server: Server, home: Path) -> None:
        self.server = server
        self.env: dict[str, str | None] = {
            **{k: None for k in os.environ if k.startswith("PUSHCORE_")},
            "XDG_CONFIG_HOME": str(home),
        }
        self.file = home / "pushcore" / "sessions.json"

    def __call__(
        self, *args: str, stdin: str | None = None, url: bool = True, cwd: Path | None = None
    ) -> Result:
        where = ["--url", self.server.base] if url else []
        with contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext():
            result = CliRunner().invoke(app, [*where, *args], input=stdin, env=self.env)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result

    def saved(self) -> dict[str, object]:
        entry = json.loads(self.file.read_text())[self.server.base]
        assert isinstance(entry, dict)
        return entry


@pytest.fixture
def pushctl(server: Server, tmp_path: Path) -> Pushctl:
    return Pushctl(server, tmp_path / "config")


def test_login_keeps_a_private_session_that_later_commands_use(
    server: Server, pushctl: Pushctl
) -> None:
    name = person(server)
    done = pushctl("login", name, "--password-stdin", stdin=PASSWORD + "\n")
    assert done.exit_code == 0, done.stderr
    assert f"Signed in to {server.base} as {name}" in done.stderr
    saved = pushctl.saved()
    # No token on the terminal; the file and its directory are the user's alone.
    assert str(saved["access_token"]) not in done.stdout + done.stderr
    assert str(saved["refresh_token"]) not in done.stdout + done.stderr
    assert stat.S_IMODE(pushctl.file.stat().st_mode) == 0o600
    assert stat.S_IMODE(pushctl.file.parent.stat().st_mode) == 0o700

    made = pushctl("keys", "create", "--name", "laptop", "--scope", "devices:read", "--json")
    assert made.exit_code == 0, made.stderr
    assert json.loads(made.stdout)["name"] == "laptop"
    listed = pushctl("keys", "list", "--json")
    assert [k["name"] for k in json.loads(listed.stdout)] == ["laptop"]


def test_streams_subscribe_by_code_after_login(server: Server, pushctl: Pushctl) -> None:
    # Someone else's stream (made with their API key), and its code shared.
    publisher = server.key(person(server))
    made = server.request("POST", "/api/streams", json={"name": "Releases"}, headers=publisher)
    code = made.json()["code"]
    subscriber = person(server)
    assert pushctl("login", subscriber, "--password-stdin", stdin=PASSWORD + "\n").exit_code == 0
    joined = pushctl("streams", "subscribe", code, "--json")
    assert joined.exit_code == 0, joined.stderr
    assert json.loads(joined.stdout)["stream"]["code"] == code


def test_a_run_after_expiry_renews_and_saves_the_new_pair(server: Server, pushctl: Pushctl) -> None:
    name = person(server)
    assert pushctl("login", name, "--password-stdin", stdin=PASSWORD + "\n").exit_code == 0
    before = pushctl.saved()
    data = json.loads(pushctl.file.read_text())
    data[server.base]["expires_at"] = 0  # as if the access token ran out since
    pushctl.file.write_text(json.dumps(data))
    assert pushctl("keys", "list").exit_code == 0
    after = pushctl.saved()
    assert after["refresh_token"] != before["refresh_token"]
    # The next run uses the saved pair: it still works, so no token was spent twice.
    assert pushctl("keys", "list").exit_code == 0
    assert pushctl.saved()["refresh_token"] == after["refresh_token"]


def test_logout_revokes_and_forgets_the_session(server: Server, pushctl: Pushctl) -> None:
    name = person(server)
    assert pushctl("login", name, "--password-stdin", stdin=PASSWORD + "\n").exit_code == 0
    refresh = str(pushctl.saved()["refresh_token"])
    done = pushctl("logout")
    assert done.exit_code == 0, done.stderr
    assert f"Signed out of {server.base}" in done.stderr
    assert server.base not in json.loads(pushctl.file.read_text())
    assert refresh_status(server, refresh) == 401
    # Signed out, a command has no credential and says so.
    refused = pushctl("keys", "list")
    assert refused.exit_code == 1
    assert "Authentication required" in refused.stderr


def test_after_login_commands_without_url_use_that_server_until_logout(
    server: Server, pushctl: Pushctl, tmp_path: Path
) -> None:
    name = person(server)
    assert pushctl("login", name, "--password-stdin", stdin=PASSWORD + "\n").exit_code == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    made = pushctl(
        "keys",
        "create",
        "--name",
        "remembered",
        "--scope",
        "devices:read",
        "--json",
        url=False,
        cwd=elsewhere,
    )
    assert made.exit_code == 0, made.stderr
    listed = pushctl("keys", "list", "--json")  # the server's own list has it
    assert "remembered" in [k["name"] for k in json.loads(listed.stdout)]
    assert list(elsewhere.iterdir()) == []  # nothing local was made

    # --account still means the local data; logout without --url ends that session.
    done = pushctl("logout", url=False, cwd=elsewhere)
    assert done.exit_code == 0, done.stderr
    assert f"Signed out of {server.base}" in done.stderr
    local = pushctl("keys", "list", url=False, cwd=elsewhere)
    assert local.exit_code == 2  # no server, no --account: a usage error, as before
    assert "--account" in local.stderr


def test_a_wrong_password_saves_nothing(server: Server, pushctl: Pushctl) -> None:
    name = person(server)
    done = pushctl("login", name, "--password-stdin", stdin="wrong password\n")
    assert done.exit_code == 1
    assert "Invalid account or password" in done.stderr
    assert not pushctl.file.exists()


def test_login_needs_a_server(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUSHCORE_")}
    done = subprocess.run(
        [sys.executable, "-m", "pushcore_cli.main", "login", "alice", "--password-stdin"],
        check=False,
        input="whatever1\n",
        capture_output=True,
        text=True,
        env={**env, "XDG_CONFIG_HOME": str(tmp_path)},
        timeout=60,
    )
    assert done.returncode == 2
    assert "--url" in done.stderr
