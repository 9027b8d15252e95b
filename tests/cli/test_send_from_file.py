"""pushctl send --from-file: JSON lines through the batch endpoint, locally and with --url."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import attrs

from pushcore.client.resources import notifications
from pushcore.converter import camel
from pushcore.domain.inputs import NewNotification
from pushcore_cli.main import app
from tests.cli.conftest import Cli
from tests.cli.runner import CliRunner
from tests.cli.test_notifications import add_device, ok


def write(tmp_path: Path, *lines: Any) -> str:
    path = tmp_path / "batch.jsonl"
    text = [line if isinstance(line, str) else json.dumps(line) for line in lines]
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    return str(path)


def stored(cli: Cli) -> list[dict[str, Any]]:
    listed: dict[str, Any] = ok(cli, "notifications list --account bob --limit 100")
    return list(listed["items"])


def test_each_line_becomes_a_notification(cli: Cli, tmp_path: Path) -> None:
    add_device(cli, "phone")
    path = write(tmp_path, {"title": "one"}, "", {"title": "two", "delay": "1h"}, {"title": "3"})
    created = ok(cli, f"send --account bob --from-file {path}")
    assert [c["title"] for c in created] == ["one", "two", "3"]
    assert all(c["devicesTargeted"] == 1 and c["status"] == "QUEUED" for c in created)
    assert {n["id"] for n in stored(cli)} == {c["id"] for c in created}

    table = cli(f"send --account bob --from-file {path}")
    assert table.exit_code == 0, table.output
    # The table names each notification's line: the blank line 2 is skipped.
    rows = [r.split() for r in table.stdout.splitlines() if "ntf_" in r]
    assert [r[0] for r in rows] == ["1", "3", "4"]


def test_stdin_is_read_for_a_dash(data_dir: Path) -> None:
    lines = "\n".join(json.dumps({"title": f"n{i}"}) for i in range(3))
    result = CliRunner().invoke(
        app,
        ["--data-dir", str(data_dir), "send", "--account", "bob", "--from-file", "-", "--json"],
        input=lines,
    )
    assert result.exit_code == 0, result.output
    assert [c["title"] for c in json.loads(result.stdout)] == ["n0", "n1", "n2"]


def test_a_line_that_is_not_an_object_refuses_the_whole_file(cli: Cli, tmp_path: Path) -> None:
    path = write(tmp_path, {"title": "fine"}, "{not json", '["a list"]', {"title": "fine"})
    result = cli(f"send --account bob --from-file {path}")
    assert result.exit_code == 1
    assert "line 2: is not JSON" in result.stderr
    assert "line 3: must be a JSON object" in result.stderr
    assert stored(cli) == []


def test_an_invalid_field_names_its_line_and_stores_nothing(cli: Cli, tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {"title": "fine"},
        {"title": ""},
        {"title": "x", "colour": "red"},
        {"title": "x", "targetDeviceToken": "nope"},
    )
    result = cli(f"send --account bob --from-file {path}")
    assert result.exit_code == 1
    assert "line 2: title" in result.stderr
    assert "line 3: colour" in result.stderr
    assert stored(cli) == []
    # Once the others are fixed, the unknown device is named by its line too.
    path = write(tmp_path, {"title": "fine"}, {"title": "x", "targetDeviceToken": "nope"})
    result = cli(f"send --account bob --from-file {path}")
    assert result.exit_code == 1
    assert "line 2: targetDeviceToken" in result.stderr
    assert stored(cli) == []


def test_files_past_500_lines_go_in_batches_each_all_or_nothing(cli: Cli, tmp_path: Path) -> None:
    good = [{"title": f"n{i}", "delay": "1h"} for i in range(500)]
    path = write(tmp_path, *good, {"title": "last", "delay": "1h"})
    assert len(ok(cli, f"send --account bob --from-file {path}")) == 501

    path = write(tmp_path, *good, {"title": ""})
    result = cli(f"send --account bob --from-file {path}")
    assert result.exit_code == 1
    assert "Refused lines 501 to 501" in result.stderr
    assert "the 500 notifications of the lines before were" in result.stderr
    assert "line 501: title" in result.stderr


def test_title_and_from_file_together_is_a_usage_error(cli: Cli, tmp_path: Path) -> None:
    path = write(tmp_path, {"title": "x"})
    assert cli(f"send hello --account bob --from-file {path}").exit_code == 2
    assert cli("send --account bob").exit_code == 2


def test_every_field_of_a_line_is_a_keyword_of_the_client() -> None:
    # Lines go through client.notifications.create_many, whose items are create's
    # keyword arguments: a request field it lacks could not be sent.
    fields = {camel(f.name) for f in attrs.fields(NewNotification)}
    keywords = {camel(p) for p in inspect.signature(notifications.create).parameters}
    assert fields == keywords
