"""Every field of a notification can be set from ``pushctl send``, and is stored.

The command's options are derived from NewNotification (``pushcore_cli/fields.py``),
but for the few fields it sets by options of its own; a field added to the request
type fails here until it has a value below (one line), so none can be forgotten.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import pytest
import typer

from pushcore.converter import camel, format_timestamp
from pushcore.domain.inputs import NewNotification, NewStream, StreamSend
from pushcore_cli.commands import notifications, streams
from pushcore_cli.fields import flags
from pushcore_cli.main import app
from tests.cli.conftest import Cli
from tests.fakes.icon_server import running_icon_server, tiny_png

DEVICE = "phone-every-field"
AT = (datetime.now(UTC) + timedelta(days=2)).replace(microsecond=0)
ICON = "{icon}"  # the icon server's URL, known once it runs


# For each field: what its option is given, and the value `notifications show --json`
# has under the field's name. --delay sets both delay fields (a duration; `custom` with
# customDelay is the API's other spelling of one), and it excludes --at.
OPTION_VALUES: dict[str, tuple[str, Any]] = {
    "title": ("every field", "every field"),
    "body": ("the body", "the body"),
    "icon_style": ("terminal", "terminal"),
    "sound": ("soft", "soft"),
    "delay": ("90s", "90s"),
    "custom_delay": ("90s", None),
    "priority": ("high", "high"),
    "target_device_token": (DEVICE, DEVICE),
    "metadata": ("build=7", {"build": "7"}),
    "scheduled_at": (AT.isoformat(), format_timestamp(AT)),
    "sender_name": ("CI", "CI"),
    "sender_icon": (ICON, ICON),
    "collapse_key": ("build-7", "build-7"),
    "renotify": ("--no-renotify", False),  # a flag: given alone
    # --ttl says either as a duration: the send with --at expires an hour after AT.
    "ttl": ("1h", 3600),
    "expires_at": ("1h", format_timestamp(AT + timedelta(hours=1))),
    # --local-time excludes --delay and --at too: a third send.
    "deliver_at": ("09:00", {"localTime": "09:00", "date": None}),
}
# The options that each go in a send of their own (timings exclude each other).
ALONE = ("--delay", "--local-time")


@pytest.fixture
def icon(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A real PNG on loopback (the sender icon is fetched when the request comes in)."""
    monkeypatch.setenv("PUSHCORE_ALLOW_PRIVATE_NETWORKS", "true")
    with running_icon_server() as server:
        yield server.serve("/avatar.png", tiny_png(), "image/png")


def names(request: type[Any]) -> list[str]:
    return [a.name for a in attrs.fields(request)]


def command_flags(*path: str) -> set[str]:
    """Every option and argument name of ``pushctl <path>`` as Click parses them."""
    group: Any = typer.main.get_command(app)
    for name in path:
        group = group.commands[name]
    return {name for p in group.params for name in (*p.opts, p.metavar or "")}


@pytest.mark.parametrize(
    ("request_type", "command", "path"),
    [
        (NewNotification, notifications.send, ("send",)),
        (StreamSend, streams.send, ("streams", "send")),
        (NewStream, streams.create, ("streams", "create")),
    ],
)
def test_every_field_has_an_option_of_the_command(
    request_type: type[Any], command: Any, path: tuple[str, ...]
) -> None:
    by_field = flags(command)
    assert list(by_field) == [camel(name) for name in names(request_type)]
    assert set(by_field.values()) <= command_flags(*path)


def test_every_notification_field_has_a_value_here() -> None:
    assert list(OPTION_VALUES) == names(NewNotification), "give the new field a value"


def test_every_field_is_stored_from_its_option(cli: Cli, icon: str) -> None:
    added = cli(f"devices add --account bob --platform android --token {DEVICE}")
    assert added.exit_code == 0, added.output
    option = flags(notifications.send)
    given = {name: value.replace(ICON, icon) for name, (value, _) in OPTION_VALUES.items()}
    # --delay, --local-time and --at exclude each other: a send each, --at's with the rest.
    sends = [{f: v for f, v in given.items() if option[camel(f)] == alone} for alone in ALONE]
    sends.append({f: v for f, v in given.items() if option[camel(f)] not in ALONE})
    for fields in sends:
        args = [
            *dict.fromkeys(
                part
                for field, value in fields.items()
                for part in (
                    (value,)
                    if field == "title" or value.startswith("--")
                    else (option[camel(field)], value)
                )
            )
        ]
        if "title" not in fields:
            args.append("delayed")
        created = cli("send --account bob --json", *args)
        assert created.exit_code == 0, created.output
        record_id = json.loads(created.stdout)["id"]
        shown = cli("notifications show --account bob --json", record_id)
        record = json.loads(shown.stdout)
        for field in fields:
            shown_as = OPTION_VALUES[field][1]
            expected = shown_as.replace(ICON, icon) if isinstance(shown_as, str) else shown_as
            assert record[camel(field)] == expected, field
