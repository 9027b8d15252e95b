"""Remote mode: with --url (or PUSHCORE_URL), the account commands work on a server's HTTP API
through pushcore.Client, with the same output, exit codes and messages as locally."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import Result

from pushcore_cli.main import app
from tests.cli.runner import CliRunner
from tests.e2e.server import Server
from tests.fakes.receiver import Receiver, running_receiver

pytestmark = pytest.mark.slow

SCOPES = "--scope notifications:read --scope notifications:write --scope devices:read"
SCOPES += " --scope devices:write"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = Server(tmp_path_factory.mktemp("server") / "data")
    s.start()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    with running_receiver() as r:
        yield r


def token(server: Server, account: str) -> str:
    """A user token of ``account`` signed with the server's secret."""
    return server.user(account)["Authorization"].removeprefix("Bearer ")


def remote(server: Server, command: str, *extra: str, **credentials: str) -> Result:
    """``pushctl --url SERVER [--api-key K] [--token T] COMMAND`` in-process."""
    options = ["--url", server.base]
    for name, value in credentials.items():
        options += [f"--{name.replace('_', '-')}", value]
    result = CliRunner().invoke(app, [*options, *shlex.split(command), *extra])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def ok_json(result: Result) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def new_key(server: Server, account: str) -> str:
    created = ok_json(
        remote(server, f"keys create --name cli {SCOPES} --json", token=token(server, account))
    )
    key: str = created["key"]
    return key


def run_pushctl(
    cwd: Path, args: list[str], env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """pushctl as a user runs it: a process in ``cwd``, PUSHCORE_* only from ``env``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PUSHCORE_")}
    return subprocess.run(
        [sys.executable, "-m", "pushcore_cli.main", *args],
        cwd=cwd,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_send_from_elsewhere_is_scheduled_on_the_server_and_delivered(
    server: Server, receiver: Receiver, tmp_path: Path
) -> None:
    key = new_key(server, "alice")
    server.webhook({"X-API-Key": key}, receiver.url("/alice"))
    env = {"PUSHCORE_URL": server.base, "PUSHCORE_API_KEY": key}

    sent = run_pushctl(tmp_path, ["send", "hi", "--delay", "1s", "--json"], env)

    assert sent.returncode == 0, sent.stderr
    created = json.loads(sent.stdout)
    assert created["status"] == "QUEUED"
    assert created["devicesTargeted"] == 1
    assert receiver.wait_for(1, timeout=30, path="/alice")
    [delivery] = receiver.delivered("/alice")
    assert delivery.body["notificationId"] == created["id"]
    assert delivery.body["title"] == "hi"
    # Nothing local was touched: no data directory where pushctl ran.
    assert list(tmp_path.iterdir()) == []
    assert "created a new data directory" not in sent.stderr


def test_keys_with_a_user_token(server: Server) -> None:
    jwt = token(server, "kate")

    created = ok_json(
        remote(server, "keys create --name ci --scope devices:read --json", token=jwt)
    )
    listed = ok_json(remote(server, "keys list --json", token=jwt))
    revoked = remote(server, f"keys revoke {created['id']}", token=jwt)

    assert created["key"].startswith("psk_")
    assert [k["id"] for k in listed] == [created["id"]]
    assert revoked.exit_code == 0, revoked.output
    assert f"Revoked API key {created['id']}." in revoked.stderr
    [after] = ok_json(remote(server, "keys list --json", token=jwt))
    assert after["isActive"] is False


def test_streams_subscribe_by_code(server: Server) -> None:
    alice_key = new_key(server, "stream-owner")
    stream = ok_json(remote(server, "streams create --name Deploys --json", api_key=alice_key))

    subscribed = remote(server, f"streams subscribe {stream['code']}", token=token(server, "sub"))

    assert subscribed.exit_code == 0, subscribed.output
    assert f"Subscribed to Deploys ({stream['code']})" in subscribed.stderr
    [found] = ok_json(remote(server, "streams subscriptions --json", token=token(server, "sub")))
    assert found["stream"]["id"] == stream["id"]
    assert found["stream"]["subscribers"] == 1


def test_notifications_list_json(server: Server) -> None:
    key = new_key(server, "lister")
    first = ok_json(remote(server, "send one --delay 1h --json", api_key=key))
    second = ok_json(remote(server, "send two --delay 1h --json", api_key=key))

    page = ok_json(remote(server, "notifications list --json", api_key=key))
    limited = ok_json(remote(server, "notifications list --limit 1 --json", api_key=key))
    rest = ok_json(
        remote(server, f"notifications list --cursor {limited['nextCursor']} --json", api_key=key)
    )

    assert [n["id"] for n in page["items"]] == [second["id"], first["id"]]
    assert page["nextCursor"] is None
    assert [n["id"] for n in limited["items"]] == [second["id"]]
    assert [n["id"] for n in rest["items"]] == [first["id"]]


def test_a_missing_credential_is_the_servers_401(server: Server) -> None:
    result = remote(server, "notifications list")

    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == "error: Authentication required\n"


def test_the_wrong_credential_is_the_servers_401_too(server: Server) -> None:
    key = new_key(server, "wrong")

    result = remote(server, "keys list", api_key=key)

    assert result.exit_code == 1
    assert result.stderr == "error: This endpoint requires a user token\n"


def test_a_token_where_a_key_is_needed_says_how_to_get_one(server: Server) -> None:
    token = server.user("hinted")["Authorization"].removeprefix("Bearer ")

    result = remote(server, "notifications stats", token=token)

    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == "error: This endpoint requires an API key"
    assert "POST /api/keys" in result.stderr.splitlines()[1]


def test_a_url_without_a_scheme_is_a_usage_error_naming_it(server: Server) -> None:
    bare = server.base.removeprefix("http://")

    result = CliRunner().invoke(app, ["--url", bare, "notifications", "list"])

    assert result.exit_code == 2
    assert f"did you mean http://{bare}?" in " ".join(result.stderr.replace("│", " ").split())


def test_a_wrong_path_names_the_url_tried(server: Server) -> None:
    key = new_key(server, "lost")
    wrong = f"{server.base}/pushcore"

    result = CliRunner().invoke(app, ["--url", wrong, "--api-key", key, "notifications", "list"])

    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: Not found: GET {wrong}/api/notifications?")
    assert "is no endpoint of a pushcore server" in result.stderr


def test_an_unknown_id_is_still_a_plain_not_found(server: Server) -> None:
    key = new_key(server, "plain")

    result = remote(server, "notifications show ntf_01JD0000000000000000000000", api_key=key)

    assert result.exit_code == 1
    assert result.stderr == "error: Notification not found\n"


def test_a_key_sent_as_a_token_says_where_keys_go(server: Server) -> None:
    key = new_key(server, "misplaced")

    result = remote(server, "keys list", token=key)

    assert result.exit_code == 1
    assert result.stderr == (
        "error: Invalid token: an API key goes in the X-API-Key header, not Authorization: Bearer\n"
    )


def test_a_key_is_sent_where_both_are_accepted(server: Server) -> None:
    # devices take either; a key with no devices scope is refused, so the key was sent.
    jwt = token(server, "both")
    narrow = ok_json(
        remote(server, "keys create --name n --scope notifications:read --json", token=jwt)
    )["key"]

    result = remote(server, "devices list", api_key=narrow, token=jwt)

    assert result.exit_code == 1
    assert result.stderr == "error: API key missing required scope: devices:read\n"


@pytest.mark.parametrize("position", ["before", "after"])
def test_account_with_url_is_a_usage_error(server: Server, position: str) -> None:
    key = new_key(server, "acct")
    command = ["notifications", "list", "--account", "acct"]
    url = ["--url", server.base, "--api-key", key]

    result = CliRunner().invoke(app, [*url, *command] if position == "before" else [*command, *url])

    assert result.exit_code == 2
    assert "'--account'" in result.output


def test_validation_errors_name_the_options_remotely_too(server: Server) -> None:
    key = new_key(server, "invalid")

    result = remote(server, "send", "", "--delay", "31d", "--sender-icon", "x", api_key=key)

    assert result.exit_code == 1
    first, *rest = result.stderr.splitlines()
    assert first == "error: Invalid request: TITLE, --delay, --sender-icon"
    assert {line.split(":")[0].strip() for line in rest} == {"TITLE", "--delay", "--sender-icon"}


def test_a_device_id_is_explained_remotely(server: Server) -> None:
    key = new_key(server, "ids")
    device = ok_json(
        remote(server, "devices add --platform android --json", "--token", "fcm-1", api_key=key)
    )

    result = remote(server, f"send hi --device {device['id']}", api_key=key)

    assert result.exit_code == 1
    assert f"--device: the account has no device {device['id']}" in result.stderr
    assert "takes the device's token" in result.stderr
    by_token = ok_json(remote(server, "send hi --device fcm-1 --json", api_key=key))
    assert by_token["devicesTargeted"] == 1


def test_devices_add_says_whether_it_was_new(server: Server) -> None:
    key = new_key(server, "again")
    add = "devices add --platform android --name phone"

    first = remote(server, add, "--token", "tok-1", api_key=key)
    second = remote(server, add, "--token", "tok-1", api_key=key)

    assert "Registered device dev_" in first.stderr
    assert "already registered, refreshed" in second.stderr


# Local and remote --json, field by field. Ids, secrets, codes and times differ by nature.
VARIABLE = {"id", "key", "keyPrefix", "code", "notificationId", "nextCursor", "tokenPrefix"}


def normalised(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: (
                "<varies>"
                if v is not None and (k in VARIABLE or k.endswith("At"))
                else normalised(v)
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [normalised(v) for v in value]
    return value


def script(run: Any, other: Any) -> list[Any]:
    """The same commands in either mode; ``run(account_options, command)`` -> JSON."""
    outputs = [
        run("keys create --name ci --scope devices:read --expires-in 30d --json"),
        run("keys list --json"),
        run("devices add --platform android --name Pixel --json", "--token", "fcm-token-1"),
        run("devices list --json"),
    ]
    sent = run("send hello --body world --delay 1h --priority high --metadata k=v --json")
    outputs += [
        sent,
        run(f"notifications show {sent['id']} --json"),
        run("notifications list --json"),
        run("notifications stats --json"),
    ]
    stream = run("streams create --name Deploys --description 'main deploys' --json")
    outputs += [stream, run("streams list --json")]
    outputs.append(other(f"streams lookup {stream['code']} --json"))
    subscription = other(f"streams subscribe {stream['code']} --json")
    outputs += [
        subscription,
        other("streams subscriptions --json"),
        run(f"streams send {stream['id']} --title 'v2 is out' --json"),
        run(f"notifications cancel {sent['id']} --json"),
        run("notifications stats --json"),
    ]
    outputs += [
        other(f"streams unsubscribe {subscription['id']} --json"),
        run(f"streams delete {stream['id']} --json"),
    ]
    device = outputs[2]
    outputs += [run(f"devices remove {device['id']} --json"), run("keys list --json")]
    return outputs


def test_local_and_remote_json_are_the_same(server: Server, tmp_path: Path) -> None:
    runner = CliRunner()
    data_dir = tmp_path / "local"

    def local_as(account: str) -> Any:
        def run(command: str, *extra: str) -> Any:
            args = ["--data-dir", str(data_dir), *shlex.split(command), "--account", account]
            return ok_json(runner.invoke(app, [*args, *extra]))

        return run

    # Keys need a user token, the rest takes the key: give both, as a user would.
    owner_token = token(server, "cmp-owner")
    owner_key = new_key(server, "cmp-owner")
    other_token = token(server, "cmp-other")

    def remote_as(jwt: str, key: str | None = None) -> Any:
        def run(command: str, *extra: str) -> Any:
            credentials = {"token": jwt} if key is None else {"token": jwt, "api_key": key}
            return ok_json(remote(server, command, *extra, **credentials))

        return run

    local = script(local_as("cmp-owner"), local_as("cmp-other"))
    # The key the remote owner already made for itself is one more in its lists.
    remote_outputs = script(remote_as(owner_token, owner_key), remote_as(other_token))
    for output in (remote_outputs[1], remote_outputs[-1]):
        output[:] = [k for k in output if k["name"] != "cli"]

    assert len(local) == len(remote_outputs)
    for step, (mine, theirs) in enumerate(zip(local, remote_outputs, strict=True)):
        assert normalised(mine) == normalised(theirs), f"step {step}"


def test_listen_registers_through_the_server_and_receives(server: Server, tmp_path: Path) -> None:
    jwt = token(server, "listener")
    key = new_key(server, "listener")
    out, err = tmp_path / "listen.out", tmp_path / "listen.err"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PUSHCORE_")}
    env = {**clean, "PUSHCORE_URL": server.base, "PUSHCORE_TOKEN": jwt}
    command = [sys.executable, "-m", "pushcore_cli.main", "listen", "--once", "--json"]
    with out.open("wb") as stdout, err.open("wb") as stderr:
        listener = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=stdout, stderr=stderr)
    try:
        deadline = time.monotonic() + 30
        while "Listening on" not in err.read_text() and listener.poll() is None:
            assert time.monotonic() < deadline, err.read_text()
            time.sleep(0.05)
        assert f"of account listener at {server.base}" in err.read_text()
        [device] = ok_json(remote(server, "devices list --json", api_key=key))

        # The shortest delay there is: the listener is already listening.
        sent = ok_json(remote(server, "send hello --delay 1s --json", api_key=key))

        assert sent["devicesTargeted"] == 1
        assert listener.wait(30) == 0, err.read_text()
    finally:
        if listener.poll() is None:
            listener.kill()
            listener.wait()
    assert json.loads(out.read_text())["notificationId"] == sent["id"]
    assert f"Removed device {device['id']}." in err.read_text()
    assert ok_json(remote(server, "devices list --json", api_key=key)) == []


def test_every_invalid_key_option_is_listed_remotely_too(server: Server) -> None:
    jwt = token(server, "badkey")

    result = remote(server, "keys create --name ' ' --scope bogus --expires-at tomorrow", token=jwt)

    assert result.exit_code == 1
    first, *rest = result.stderr.splitlines()
    assert first == "error: Invalid request: --name, --scope, --expires-at"
    assert {line.split(":")[0].strip() for line in rest} == {"--name", "--scope", "--expires-at"}


def write_lines(tmp_path: Path, *items: dict[str, Any]) -> str:
    path = tmp_path / "batch.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return str(path)


def test_remote_mode_sends_the_lines_to_the_server(server: Server, tmp_path: Path) -> None:
    key = new_key(server, "batcher")
    path = write_lines(tmp_path, {"title": "r1"}, {"title": "r2", "delay": "1h"})
    created = ok_json(remote(server, f"send --from-file {path} --json", api_key=key))
    assert [c["title"] for c in created] == ["r1", "r2"]

    path = write_lines(tmp_path, {"title": "r3"}, {"title": "r4", "bogus": 1})
    result = remote(server, f"send --from-file {path}", api_key=key)
    assert result.exit_code == 1
    assert "line 2: bogus" in result.stderr
    listed = ok_json(remote(server, "notifications list --json", api_key=key))
    assert sorted(n["title"] for n in listed["items"]) == ["r1", "r2"]


def test_a_page_has_the_apis_default_size_remotely_too(server: Server, tmp_path: Path) -> None:
    key = new_key(server, "pager")
    path = write_lines(tmp_path, *({"title": f"n{i}", "delay": "1h"} for i in range(21)))
    ok_json(remote(server, f"send --from-file {path} --json", api_key=key))

    page = ok_json(remote(server, "notifications list --json", api_key=key))

    assert len(page["items"]) == 20
    assert page["nextCursor"] is not None
