"""What /openapi.json says of each request body is what the converter enforces.

For every operation that takes a body, bodies generated from its schema (by
schemathesis: an implementation of JSON Schema that is not ours) are taken by
the converter's structuring as they are, and such a body changed to break one
constraint of the schema (too long, too short, out of range, not in the enum,
of the wrong type, an unknown field, a required one missing) is refused with
a validation error, the API's 400, naming that field. In process and bounded:
a few seconds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from functools import partial
from typing import Any

import jsonschema_rs
import pytest
import schemathesis
from hypothesis import HealthCheck, assume, given, settings
from schemathesis import GenerationMode

from pushcore.converter import structure_batch, structure_request
from pushcore.converter.deliveries import ReceiptRequest
from pushcore.converter.recipient import SubscriptionMute, parse_account_patch
from pushcore.domain.errors import ValidationError
from pushcore.domain.events import NewWebhook, WebhookChange
from pushcore.domain.inputs import (
    InboxRead,
    NewApiKey,
    NewDevice,
    NewNotification,
    NewStream,
    StreamSend,
    Subscribe,
)
from pushcore.domain.oidc import LinkRequest, SignInExchange
from pushcore.domain.people import PasswordChange, SessionRefresh, SignIn, SignUp, common_passwords
from pushcore.domain.scheduling import METADATA_MAX_BYTES
from pushcore.domain.validation import NOT_BLANK, not_blank
from pushcore_http.app import openapi_document
from pushcore_http.errors import status_for

Json = dict[str, Any]

# How each body schema is read: the converter's structuring, as the route does it.
STRUCTURE: dict[str, Callable[[Any], object]] = {
    "InboxRead": partial(structure_request, InboxRead),
    "NewApiKey": partial(structure_request, NewApiKey),
    "NewDevice": partial(structure_request, NewDevice),
    "NewNotification": partial(structure_request, NewNotification),
    "NewNotificationBatch": structure_batch,
    "NewStream": partial(structure_request, NewStream),
    "SignInExchange": partial(structure_request, SignInExchange),
    "LinkRequest": partial(structure_request, LinkRequest),
    "StreamSend": partial(structure_request, StreamSend),
    "Subscribe": partial(structure_request, Subscribe),
    "SignIn": partial(structure_request, SignIn),
    "SignUp": partial(structure_request, SignUp),
    "SessionRefresh": partial(structure_request, SessionRefresh),
    "PasswordChange": partial(structure_request, PasswordChange),
    "AccountPatch": parse_account_patch,
    "SubscriptionMute": partial(structure_request, SubscriptionMute),
    "NewWebhook": partial(structure_request, NewWebhook),
    "WebhookChange": partial(structure_request, WebhookChange),
    "ReceiptRequest": partial(structure_request, ReceiptRequest),
}

DOCUMENT = openapi_document()
SCHEMAS: Json = DOCUMENT["components"]["schemas"]
# Bodies most of whose rules no JSON Schema can state (an RFC 5545 rule, an IANA
# zone, a template checked as a notification): tests/http/test_schedules.py pins
# each refusal.
IN_WORDS = {"NewSchedule"}
# (method, path, the name of its body's schema) of every operation that takes a body.
OPERATIONS = [
    (method, path, name)
    for path, item in DOCUMENT["paths"].items()
    for method, op in item.items()
    if "requestBody" in op
    for name in [
        op["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    ]
    if name not in IN_WORDS
]
SETTINGS = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)


def schema_of(node: Json) -> Json:
    """``node`` with a reference followed and a nullable's null left out."""
    if "$ref" in node:
        node = node | SCHEMAS[node["$ref"].rsplit("/", 1)[1]]
    if "anyOf" in node:
        (node,) = [s for s in node["anyOf"] if s.get("type") != "null"]
        return schema_of(node)
    return node


# What the document says in words only, as JSON Schema cannot say it.


def within_words(body: Any) -> bool:
    """Metadata holds at most METADATA_MAX_BYTES (of keys and values, in UTF-8)."""
    items = body.get("notifications", [body]) if isinstance(body, dict) else []
    return all(
        sum(len(k.encode()) + len(v.encode()) for k, v in (item.get("metadata") or {}).items())
        <= METADATA_MAX_BYTES
        for item in items
    )


def uncommon(body: Any) -> bool:
    """A new password is not one of the 10,000 most common (said in words: a schema
    listing them all would be 77 KB)."""
    fields = ("password", "newPassword")
    return not isinstance(body, dict) or all(
        not isinstance(body.get(f), str) or body[f].lower() not in common_passwords()
        for f in fields
    )


def held(value: Any) -> bool:
    """Every timestamp falls within years 1 to 9999 in UTC (the ones Python can hold)."""
    if isinstance(value, dict):
        return all(held(v) for v in value.values())
    if isinstance(value, list):
        return all(held(v) for v in value)
    if isinstance(value, str) and re.match(r"\d{4}-\d\d-\d\dT", value):
        try:
            datetime.fromisoformat(value).astimezone(UTC)
        except OverflowError:
            return False
    return True


def distinct(body: Any) -> bool:
    """Quiet hours end at another time than they start."""
    hours = body.get("quietHours") if isinstance(body, dict) else None
    return not isinstance(hours, dict) or hours.get("start") != hours.get("end")


def as_written(value: Any) -> Any:
    """``value`` with integers written without a fraction: JSON Schema's integer takes
    3.0, the API wants 3 (it refuses 3.0 as a float: tests/unit/test_converter.py)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: as_written(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_written(v) for v in value]
    return value


_WRONG_TYPE = {"string": 12, "integer": "12", "boolean": "true", "array": "x", "object": "x"}
_UNMATCHED = (" ", "ftp://example.com", "x")  # one of them breaks each pattern the API has


def breaking(node: Json, current: Any) -> Iterator[tuple[Any, str]]:
    """Values that break one constraint of ``node``, each with where the refusal points
    below the field (``[0].title`` inside an array of objects, else nothing)."""
    schema = schema_of(node)
    yield _WRONG_TYPE[schema["type"]], ""
    if "enum" in schema:
        yield "not-" + "-".join(schema["enum"]), ""
    if "maxLength" in schema:
        yield "x" * (schema["maxLength"] + 1), ""
    if schema.get("minLength", 0) > 0:
        yield "", ""
    if "pattern" in schema:
        yield next(s for s in _UNMATCHED if not re.search(schema["pattern"], s)), ""
    if schema.get("format") == "date-time":
        yield "yesterday", ""
    if "minimum" in schema:
        yield schema["minimum"] - 1, ""
    if "maximum" in schema:
        yield schema["maximum"] + 1, ""
    if schema["type"] == "array":
        yield from _breaking_array(schema, current)
    if schema["type"] == "object":
        yield from _breaking_object(schema)


def _breaking_array(schema: Json, current: Any) -> Iterator[tuple[Any, str]]:
    if schema.get("minItems", 0) > 0:
        yield [], ""
    if "enum" in schema["items"]:
        yield ["not-" + "-".join(schema["items"]["enum"])], ""
    item = schema_of(schema["items"])
    if current and "properties" in item:  # objects: their fields are named in the array
        if "maxItems" in schema:
            yield current[:1] * (schema["maxItems"] + 1), ""
        for changed, where in broken(item, current[0]):
            yield [changed, *current[1:]], f"[0].{where}"


def _breaking_object(schema: Json) -> Iterator[tuple[Any, str]]:
    if "properties" in schema:  # a nested object is named as a whole
        yield {"unknownField": 1}, ""
        if schema["required"]:
            yield {}, ""
    else:  # a map
        yield {"k": 12}, ""
        if "maxProperties" in schema:
            yield {f"k{i}": "v" for i in range(schema["maxProperties"] + 1)}, ""


def broken(schema: Json, body: Json) -> Iterator[tuple[Json, str]]:
    """``body`` (valid for the closed object ``schema``) changed to break one constraint,
    each with the field a refusal must name."""
    yield {**body, "unknownField": 1}, "unknownField"
    for name in schema["required"]:
        yield {k: v for k, v in body.items() if k != name}, name
    for name, node in schema["properties"].items():
        for value, below in breaking(node, body.get(name)):
            yield {**body, name: value}, name + below


@pytest.mark.parametrize(("method", "path", "name"), OPERATIONS)
def test_what_the_schema_allows_is_taken_and_what_it_forbids_is_refused(
    method: str, path: str, name: str
) -> None:
    structure = STRUCTURE[name]
    operation = schemathesis.openapi.from_dict(DOCUMENT)[path][method.upper()]
    # The JSON bodies: a text body (one-line publishing) is a title and a body only.
    bodies = (
        operation.as_strategy(generation_mode=GenerationMode.POSITIVE)
        .filter(lambda c: c.media_type == "application/json")
        .map(lambda c: c.body)
    )

    @given(body=bodies)
    @SETTINGS
    def check(body: Json) -> None:
        assume(within_words(body) and uncommon(body) and held(body) and distinct(body))
        body = as_written(body)
        structure(body)  # what the schema allows is taken
        for changed, field in broken(SCHEMAS[name], body):  # what it forbids is refused
            with pytest.raises(ValidationError) as refused:
                structure(changed)
            assert status_for(refused.value) == 400
            named = [d.field for d in refused.value.details]
            # An object's own fields are named inside it (deliverAt.localTime).
            assert any(n == field or n.startswith(f"{field}.") for n in named), (
                f"{changed!r}: {named}"
            )

    check()


def test_every_body_is_checked() -> None:
    assert {name for _, _, name in OPERATIONS} == set(STRUCTURE)


def test_not_blank_means_the_same_to_the_document_and_the_server() -> None:
    # Read by a JSON Schema implementation in Rust (schemathesis's), as a client would.
    pattern = jsonschema_rs.validator_for({"type": "string", "pattern": NOT_BLANK})
    for point in (*range(0x3001), 0xFEFF, 0x1F600):
        char = chr(point)
        assert pattern.is_valid(char) is (not char.isspace()), hex(point)
        try:
            not_blank(None, None, char)
        except ValueError:
            assert char.isspace(), hex(point)
        else:
            assert not char.isspace(), hex(point)
