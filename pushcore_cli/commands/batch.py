"""pushctl send --from-file: JSON lines, sent through the batch endpoint 500 at a time."""

from __future__ import annotations

import inspect
import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from pushcore.converter import (
    NotificationCreatedView,
    camel,
    format_timestamp,
    structure_batch,
    to_json,
)
from pushcore.domain.errors import FieldError, ValidationError
from pushcore.domain.scheduling import MAX_BATCH
from pushcore_cli import output
from pushcore_cli.commands import Api
from pushcore_cli.errors import api_name

if TYPE_CHECKING:
    from pushcore.client import Client

_ITEM = re.compile(r"notifications\[(\d+)\]\.?")


@attrs.frozen
class Line:
    """One notification of the file: its line number and its JSON object."""

    number: int
    item: dict[str, Any]


def read_lines(source: str) -> list[Line]:
    """The objects of a JSON-lines file (``-``: stdin), blank lines skipped.

    Every line is checked before anything is sent: one ValidationError names
    each line that is not a JSON object.
    """
    if source == "-":
        text = sys.stdin.read()
    else:
        try:
            text = Path(source).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValidationError(
                [FieldError("--from-file", f"cannot read {source}: {exc}")]
            ) from None
    lines: list[Line] = []
    errors: list[FieldError] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            item = json.loads(raw)
        except json.JSONDecodeError as exc:
            errors.append(FieldError(f"line {number}", f"is not JSON: {exc.msg}"))
            continue
        if not isinstance(item, dict):
            errors.append(FieldError(f"line {number}", "must be a JSON object"))
            continue
        lines.append(Line(number, item))
    if errors:
        raise ValidationError(errors, f"Invalid lines in {source}; nothing was sent")
    if not lines:
        raise ValidationError([FieldError("--from-file", f"{source} holds no notification")])
    return lines


def by_line(error: ValidationError, batch: list[Line]) -> list[FieldError]:
    """The batch's error details with ``notifications[3].title`` as ``line 7: title``."""
    details: list[FieldError] = []
    for detail in error.details:
        match = _ITEM.match(detail.field)
        if match is None or int(match[1]) >= len(batch):
            details.append(detail)
            continue
        # The file's lines are the API's JSON: name its fields as the file does.
        field = api_name(detail.field[match.end() :])
        where = f"line {batch[int(match[1])].number}"
        details.append(FieldError(f"{where}: {field}" if field else where, detail.message))
    return details


def arguments(client: Client, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The API's JSON objects as keyword arguments of ``client.notifications.create``.

    Checked first by the API's own reading of a batch, so that a field no
    keyword names (a typo) is refused as the server refuses it, by its name
    (``notifications[3].bogus``), and nothing is sent.
    """
    structure_batch({"notifications": items})
    names = {
        camel(name): name for name in inspect.signature(client.notifications.create).parameters
    }
    return [{names.get(field, field): value for field, value in item.items()} for item in items]


def send_lines(api: Api, lines: list[Line]) -> list[tuple[Line, NotificationCreatedView]]:
    """Send ``lines`` in batches of up to 500, each all or nothing; stop at a refused one."""
    sent: list[tuple[Line, NotificationCreatedView]] = []
    for start in range(0, len(lines), MAX_BATCH):
        batch = lines[start : start + MAX_BATCH]
        try:
            items = arguments(api.client, [line.item for line in batch])
            created = api.client.notifications.create_many(items)
        except ValidationError as error:
            first, last = batch[0].number, batch[-1].number
            message = f"Refused lines {first} to {last}: nothing of them was stored"
            if sent:
                message += f" (the {len(sent)} notifications of the lines before were)"
            raise ValidationError(by_line(error, batch), message) from None
        sent += zip(batch, created, strict=True)
    return sent


def show(sent: Iterable[tuple[Line, NotificationCreatedView]], json_output: bool) -> None:
    """The creation responses: ``--json`` an array of them, else a table by line."""
    if json_output:
        output.print_json([to_json(created) for _, created in sent])
        return
    output.print_table(
        ["line", "id", "status", "scheduled", "devices"],
        [
            (
                str(line.number),
                created.id,
                created.status.value,
                format_timestamp(created.scheduled_at),
                str(created.devices_targeted),
            )
            for line, created in sent
        ],
    )
