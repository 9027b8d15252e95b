"""Rows derived from attrs declarations (pushcore.storage.sql.rows), without a database.

The contract tests (tests/contract/test_records_contract.py) check the
declarations of storage/records.py against each database's schema; these
check the derivation: which columns a field gets, what each codec does, and
that an entity comes back from its row as it went in.
"""

from __future__ import annotations

import json
import traceback
import typing
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pushcore.domain.idempotency import IdempotencyRecord
from pushcore.domain.model import ApiKey, Delivery, Device, Notification
from pushcore.domain.states import NotificationStatus
from pushcore.storage.records import DELIVERIES, DEVICES, IDEMPOTENCY_KEYS, NOTIFICATIONS
from pushcore.storage.sql.rows import INT, Table
from tests.contract.test_records_contract import distinct


class Text:
    """Primitives of a make-believe database that holds everything as text."""

    def time(self, at: datetime) -> str:
        return at.isoformat()

    def read_time(self, value: Any) -> datetime:
        return datetime.fromisoformat(value)

    def json(self, value: Mapping[str, str]) -> str:
        return json.dumps(dict(value))

    def read_json(self, value: Any) -> Mapping[str, str]:
        loaded: dict[str, str] = json.loads(value)
        return loaded

    def scopes(self, values: list[str]) -> str:
        return " ".join(values)

    def read_scopes(self, value: Any) -> list[str]:
        return str(value).split()


TEXT = Text()


def test_columns_follow_the_fields_a_nested_value_spread_over_columns_of_its_name() -> None:
    stream = NOTIFICATIONS.names.index("stream_id")
    assert NOTIFICATIONS.names[stream : stream + 4] == (
        "stream_id",
        "stream_name",
        "stream_code",
        "wake_at",  # the field after stream
    )
    keys = DEVICES.names.index("keys_p256dh")
    assert DEVICES.names[keys : keys + 2] == ("keys_p256dh", "keys_auth")
    assert "stream" not in NOTIFICATIONS.names


def test_overrides_name_a_column_and_give_a_codec() -> None:
    assert "lease_until" in DELIVERIES.names
    assert "lease_expires_at" not in DELIVERIES.names
    assert IDEMPOTENCY_KEYS.names[1] == "idempotency_key"
    assert dict(IDEMPOTENCY_KEYS.kinds)["body"] == "text"


def test_kinds_come_from_the_types() -> None:
    kinds = dict(NOTIFICATIONS.kinds)
    assert kinds["custom_delay"] == "int"
    assert kinds["metadata"] == "json"
    assert kinds["scheduled_at"] == kinds["wake_at"] == "time"
    assert kinds["status"] == kinds["stream_code"] == "text"
    assert dict(DEVICES.kinds)["is_active"] == "bool"


def test_the_insert_names_every_column_once() -> None:
    insert = NOTIFICATIONS.insert
    assert insert.startswith("INSERT INTO notifications (id, account_id, title, body, ")
    assert insert.count("?") == len(NOTIFICATIONS.names) == len(set(NOTIFICATIONS.names))


@attrs.frozen
class Odd:
    id: str
    sizes: list[int]


@attrs.frozen
class Loose:
    id: str
    maybe: str | None


@attrs.frozen
class Holder:
    id: str
    inner: Loose


def test_a_type_without_a_codec_is_refused_at_declaration_naming_the_field() -> None:
    with pytest.raises(TypeError, match=r"Odd\.sizes: no column codec"):
        Table("odd", Odd)
    assert "sizes" in Table("odd", Odd, codecs={"sizes": INT}).names


def test_overrides_of_no_field_are_refused() -> None:
    with pytest.raises(TypeError, match="has no field lease"):
        Table("deliveries", Delivery, columns={"lease": "lease_until"})
    with pytest.raises(TypeError, match="has no field nope"):
        NOTIFICATIONS.part("status", "nope")


def test_a_nested_value_with_an_optional_part_cannot_be_spread() -> None:
    # All-NULL columns would not tell None from a value whose parts are None.
    with pytest.raises(TypeError, match=r"Holder\.inner: Loose\.maybe"):
        Table("holders", Holder)


@pytest.mark.parametrize("cls", [Notification, Delivery, Device, ApiKey, IdempotencyRecord])
def test_an_entity_whose_fields_all_differ_round_trips(cls: type[Any]) -> None:
    table = {t.cls: t for t in (NOTIFICATIONS, DELIVERIES, DEVICES, IDEMPOTENCY_KEYS)}.get(cls)
    table = table or Table("api_keys", cls)
    entity = distinct(cls)
    codec = table.codec(TEXT)
    row = codec.encode(entity)
    assert len(row) == len(table.names)
    assert codec.params(entity) == dict(zip(table.names, row, strict=True))
    assert codec.decode(row) == entity


def test_an_absent_nested_value_is_null_in_each_of_its_columns() -> None:
    notification = attrs.evolve(distinct(Notification), stream=None)
    device = attrs.evolve(distinct(Device), keys=None)
    values = NOTIFICATIONS.codec(TEXT).params(notification)
    assert values["stream_id"] is values["stream_name"] is values["stream_code"] is None
    assert NOTIFICATIONS.codec(TEXT).decode(tuple(values.values())) == notification
    assert DEVICES.codec(TEXT).decode(DEVICES.codec(TEXT).encode(device)) == device


def values(tp: Any) -> st.SearchStrategy[Any]:
    """Any value of type ``tp``; times timezone-aware, as the stores take them."""
    if type(None) in typing.get_args(tp):
        (inner,) = [a for a in typing.get_args(tp) if a is not type(None)]
        return st.none() | values(inner)
    if tp is datetime:
        return st.datetimes(timezones=st.just(UTC))
    if attrs.has(tp):
        hints = typing.get_type_hints(tp)
        return st.builds(tp, **{a.alias: values(hints[a.name]) for a in attrs.fields(tp)})
    return st.from_type(tp)


# Not idempotency_keys: its body is UTF-8 (a JSON answer) by declaration, not any bytes.
@given(st.data())
@pytest.mark.parametrize("table", [NOTIFICATIONS, DELIVERIES, DEVICES], ids=lambda t: t.name)
def test_any_entity_round_trips(table: Table[Any], data: st.DataObject) -> None:
    entity = data.draw(values(table.cls))
    codec = table.codec(TEXT)
    assert codec.decode(codec.encode(entity)) == entity


def test_a_part_reads_its_fields_into_an_entity_and_keeps_the_rest() -> None:
    entity = distinct(Notification)
    part = NOTIFICATIONS.part("status", "settled_at", "id")
    assert part.names == ("status", "settled_at", "id")
    codec = part.codec(TEXT)
    assert codec.encode(entity) == (entity.status.value, entity.settled_at.isoformat(), entity.id)  # type: ignore[union-attr]
    merged = codec.merge(entity, ("CANCELLED", None, entity.id))
    assert merged == attrs.evolve(entity, status=NotificationStatus.CANCELLED, settled_at=None)
    with pytest.raises(TypeError, match="is not every field"):
        codec.decode(("CANCELLED", None, entity.id))


def test_codecs_are_generated_once_per_dialect() -> None:
    assert NOTIFICATIONS.codec(TEXT) is NOTIFICATIONS.codec(TEXT)
    assert NOTIFICATIONS.codec(TEXT) is not NOTIFICATIONS.codec(Text())


def test_a_traceback_shows_the_generated_line() -> None:
    row = list(DELIVERIES.codec(TEXT).encode(distinct(Delivery)))
    row[DELIVERIES.names.index("status")] = "LOST"
    with pytest.raises(KeyError) as caught:
        DELIVERIES.codec(TEXT).decode(row)
    shown = "".join(traceback.format_tb(caught.value.__traceback__))
    assert "<pushcore rows deliveries on Text>" in shown
    assert "_DeliveryStatus[c4]" in shown
