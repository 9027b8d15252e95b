"""pushctl send --ttl and pushctl notifications withdraw, against a real `pushctl serve`
subprocess (remote mode), and the client's withdraw underneath."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from tests.cli.test_remote import SCOPES, ok_json, remote, token
from tests.e2e.server import Server
from tests.fakes.receiver import Receiver, running_receiver

pytestmark = pytest.mark.slow


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


def test_send_with_a_ttl_then_withdraw_it_twice(
    server: Server, receiver: Receiver, tmp_path: Path
) -> None:
    key = ok_json(
        remote(server, f"keys create --name cli {SCOPES} --json", token=token(server, "wd"))
    )["key"]
    server.webhook({"X-API-Key": key}, receiver.url("/wd"))

    created = ok_json(remote(server, "send hi --delay 1s --ttl 1h --json", api_key=key))
    shown = ok_json(remote(server, f"notifications show {created['id']} --json", api_key=key))
    due = datetime.fromisoformat(shown["scheduledAt"])
    assert datetime.fromisoformat(shown["expiresAt"]) - due == timedelta(hours=1)
    assert shown["ttl"] == 3600
    assert receiver.wait_for(1, timeout=30, path="/wd")
    assert receiver.delivered("/wd")[0].body["expiresAt"] == shown["expiresAt"]

    first = remote(server, f"notifications withdraw {created['id']}", api_key=key)
    again = ok_json(remote(server, f"notifications withdraw {created['id']} --json", api_key=key))

    assert first.exit_code == 0, first.output
    assert f"Withdrew notification {created['id']}." in first.stderr
    assert "withdrawn" in first.stdout
    assert again["withdrawnAt"] is not None
    assert receiver.wait_for(2, timeout=30, path="/wd")
    assert receiver.delivered("/wd")[1].body == {
        "event": "withdrawn",
        "notificationId": created["id"],
        "collapseKey": None,
    }


def test_a_ttl_that_is_no_duration_is_a_usage_error(server: Server) -> None:
    key = ok_json(
        remote(server, f"keys create --name cli {SCOPES} --json", token=token(server, "bad"))
    )["key"]
    result = remote(server, "send hi --ttl soon", api_key=key)
    assert result.exit_code == 2
    assert "--ttl" in result.output
    too_long = remote(server, "send hi --ttl 29d", api_key=key)
    assert too_long.exit_code != 0
    assert "ttl" in too_long.output
