"""A local ``pushctl send`` goes straight to the notification service
(pushcore_cli/local_send.py): what it prints, stores and refuses is what the road
through the HTTP app in process prints, stores and refuses."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import pytest
from typer.testing import Result

from pushcore_cli import inprocess, local_send
from tests.cli.conftest import Cli

if TYPE_CHECKING:
    from tests.pg import Cluster  # psycopg: not needed by the SQLite runs

# Ids and times differ from one send to the next; everything else must not.
_VARYING = re.compile(r"ntf_[0-9A-Z]{26}|\d{4}-\d\d-\d\dT[0-9:.]+Z")


def both_roads(cli: Cli, monkeypatch: pytest.MonkeyPatch, command: str) -> tuple[Result, Result]:
    """``command`` run straight to the service, then through the app (the road every
    body the straight road does not take goes)."""
    straight = cli(command)
    with monkeypatch.context() as patched:
        patched.setattr(local_send, "plain_body", lambda _body: None)
        through_app = cli(command)
    return straight, through_app


def same(result: Result) -> tuple[int, str, str]:
    """Exit code, stdout and stderr, ids and times left out."""
    return (
        result.exit_code,
        _VARYING.sub("*", result.stdout),
        _VARYING.sub("*", result.stderr),
    )


def stored(cli: Cli, account: str, database: str = "") -> list[dict[str, Any]]:
    """The account's notifications as the API shows them, ids and times left out."""
    listed = cli(f"{database} notifications list --account {account} --json")
    items: list[dict[str, Any]] = json.loads(listed.stdout)["items"]
    return [json.loads(_VARYING.sub("*", json.dumps(item))) for item in items]


@pytest.mark.parametrize(
    "options",
    [
        "",
        "--json",
        "--body 'main is green' --delay 90s --priority high --sound soft --icon-style bell"
        " --metadata team=core --metadata build=42 --no-renotify"
        " --sender-name CI --ttl 2h",
        "--at 2020-01-01T09:00:00+02:00 --json",
        "--local-time 09:00",
    ],
)
def test_a_send_prints_and_stores_what_the_app_road_does(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, options: str
) -> None:
    straight, through_app = both_roads(cli, monkeypatch, f"send 'Build passed' -a a {options}")
    assert straight.exit_code == 0, straight.stderr
    assert same(straight) == same(through_app)
    first, second = stored(cli, "a")
    assert first == second  # (no collapse key: the second would replace the first)


@pytest.mark.parametrize(
    "options",
    [
        "--delay 31d",
        "--sender-name " + "n" * 51,
        "--body " + "b" * 2001,
        "--device nope",
        " ".join(f"--metadata k{i}=v" for i in range(51)),
        "--at 2099-01-01T09:00:00+02:00",
    ],
)
def test_a_refusal_is_the_apps_word_for_word(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, options: str
) -> None:
    straight, through_app = both_roads(cli, monkeypatch, f"send 'Build passed' -a a {options}")
    assert straight.exit_code == 1
    assert same(straight) == same(through_app)
    assert stored(cli, "a") == []


def test_a_too_long_title_names_the_argument_as_the_app_road_does(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    straight, through_app = both_roads(cli, monkeypatch, "send " + "t" * 201 + " -a a")
    assert straight.exit_code == 1
    assert same(straight) == same(through_app)


def test_a_plain_send_builds_no_http_app(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_app(*_args: object) -> None:
        raise AssertionError("a plain local send built the HTTP app")

    with monkeypatch.context() as patched:
        patched.setattr(inprocess, "local_client", no_app)
        sent = cli("send 'Backup done' -a a --body nightly --delay 1m")
    assert sent.exit_code == 0, sent.stderr
    assert [n["title"] for n in stored(cli, "a")] == ["Backup done"]


@pytest.mark.parametrize(
    ("body", "straight"),
    [
        ({"title": "Backup done", "metadata": {"run": "12"}}, True),
        ({"title": "x" * local_send.BODY_LIMIT}, False),  # the app's 413, not a field error
        ({"title": "a\x00b"}, False),  # the app's reading names the field
        ({"title": "build " + "9" * 21}, False),  # looks like an integer too long: the app's
        ({"title": "\udcff"}, False),  # not Unicode (undecodable bytes in argv)
    ],
)
def test_only_plain_bodies_go_straight(body: dict[str, Any], straight: bool) -> None:
    assert (local_send.plain_body(body) is not None) is straight


@pytest.mark.postgres
def test_on_postgresql_too(cli: Cli, monkeypatch: pytest.MonkeyPatch, pg_cluster: Cluster) -> None:
    database = f"--database-url {pg_cluster.create_database('local_send')}"
    send = f"{database} send 'Build passed' -a a --body green --delay 90s --metadata run=7"
    straight, through_app = both_roads(cli, monkeypatch, send)
    assert straight.exit_code == 0, straight.stderr
    assert same(straight) == same(through_app)
    first, second = stored(cli, "a", database)
    assert first == second
    refused, refused_by_app = both_roads(cli, monkeypatch, f"{database} send x -a a --device nope")
    assert refused.exit_code == 1
    assert same(refused) == same(refused_by_app)
