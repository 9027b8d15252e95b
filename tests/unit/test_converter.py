"""Request structuring, timestamps and device rules (converter._base, domain.inputs)."""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import attrs
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from hypothesis import given
from hypothesis import strategies as st

from pushcore.converter import (
    BatchCreatedView,
    NotificationCreatedView,
    View,
    camel,
    format_timestamp,
    json_of,
    maybe_timestamp,
    parse_timestamp,
    structure_request,
    to_json,
)
from pushcore.converter._base import describe
from pushcore.domain import validation as v
from pushcore.domain.errors import FieldError, InvalidJson, ValidationError
from pushcore.domain.inputs import NewApiKey, NewDevice, device_errors
from pushcore.domain.model import Platform, WebPushKeys
from pushcore.domain.scopes import Scope
from pushcore.domain.states import NotificationStatus
from tests.gateways.support import notification as gateway_notification

TIMESTAMP_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
SCOPES_MESSAGE = (
    "must be an array whose items are one of: "
    "notifications:read, notifications:write, devices:read, devices:write, webhooks:read,"
    " webhooks:write"
)


@attrs.frozen
class Sample:
    """A request class with the JSON types NewApiKey and NewDevice lack."""

    count: int = attrs.field(default=1, validator=v.int_range(1, 10))
    flag: bool = False
    tags: tuple[str, ...] = ()
    labels: dict[str, str] | None = None


def details(cls: type[Any], data: Any) -> dict[str, str]:
    """The field -> message map of the ValidationError that structuring ``data`` raises."""
    with pytest.raises(ValidationError) as info:
        structure_request(cls, data)
    found = {d.field: d.message for d in info.value.details}
    assert len(found) == len(info.value.details), "a field is listed twice"
    return found


def b64url(raw: bytes, padded: bool = False) -> str:
    text = base64.urlsafe_b64encode(raw).decode()
    return text if padded else text.rstrip("=")


RAW_POINT = (
    ec.generate_private_key(ec.SECP256R1())
    .public_key()
    .public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
)
P256DH = b64url(RAW_POINT)
AUTH = b64url(bytes(range(16)))
ENDPOINT = "https://fcm.googleapis.com/fcm/send/abc:def"


# -- structure_request: NewApiKey ----------------------------------------------


def test_a_valid_new_api_key() -> None:
    key = structure_request(
        NewApiKey,
        {
            "name": "ci",
            "scopes": ["notifications:write", "notifications:read"],
            "expiresAt": "2027-01-01T12:00:00+02:00",
        },
    )
    assert key == NewApiKey(
        name="ci",
        scopes=(Scope.NOTIFICATIONS_WRITE, Scope.NOTIFICATIONS_READ),
        expires_at=datetime(2027, 1, 1, 10, 0, tzinfo=UTC),
    )
    assert key.expires_at is not None
    assert key.expires_at.utcoffset() == timedelta(0)


def test_optional_fields_may_be_missing_or_null() -> None:
    expected = NewApiKey(name="ci", scopes=(Scope.DEVICES_READ,), expires_at=None)
    assert structure_request(NewApiKey, {"name": "ci", "scopes": ["devices:read"]}) == expected
    assert (
        structure_request(NewApiKey, {"name": "ci", "scopes": ["devices:read"], "expiresAt": None})
        == expected
    )


def test_every_invalid_field_is_listed_at_once() -> None:
    found = details(
        NewApiKey,
        {
            "nmae": "typo",
            "name": "x" * 101,
            "scopes": ["notifications:read", "notifications:admin"],
            "expiresAt": "next tuesday",
        },
    )
    assert found == {
        "nmae": "is not a known field",
        "name": "must be 1 to 100 characters",
        "scopes": SCOPES_MESSAGE,
        "expiresAt": "must be an ISO 8601 timestamp with a time zone or null",
    }


def test_the_error_message_names_the_fields() -> None:
    with pytest.raises(ValidationError) as info:
        structure_request(NewApiKey, {"name": "", "scopes": []})
    assert info.value.message == "Invalid request: name, scopes"
    assert info.value.code == "validation_error"
    assert info.value.details == (
        FieldError("name", "must be 1 to 100 characters"),
        FieldError("scopes", "must name at least one scope"),
    )


def test_errors_are_listed_in_the_order_of_the_fields_whatever_their_kind() -> None:
    # A validator's refusal of an earlier field comes before a later field's wrong type.
    with pytest.raises(ValidationError) as info:
        structure_request(NewApiKey, {"scopes": "all", "name": "", "x": 1})
    assert [e.field for e in info.value.details] == ["x", "name", "scopes"]
    assert info.value.details[1] == FieldError("name", "must be 1 to 100 characters")


def test_required_fields() -> None:
    assert details(NewApiKey, {}) == {"name": "is required", "scopes": "is required"}


def test_unknown_snake_case_fields_are_refused() -> None:
    found = details(NewApiKey, {"name": "ci", "scopes": ["devices:read"], "expires_at": None})
    assert found == {"expires_at": "is not a known field"}


@pytest.mark.parametrize("name", [" ", "\t\n", " " * 100])
def test_a_blank_name_is_refused(name: str) -> None:
    assert details(NewApiKey, {"name": name, "scopes": ["devices:read"]}) == {
        "name": "must not be blank"
    }


@pytest.mark.parametrize("length", [1, 100])
def test_name_length_limits_are_inclusive(length: int) -> None:
    key = structure_request(NewApiKey, {"name": "n" * length, "scopes": ["devices:read"]})
    assert len(key.name) == length


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("name", 5, "must be a string"),
        ("name", True, "must be a string"),
        ("name", None, "must be a string"),
        ("name", ["ci"], "must be a string"),
        ("scopes", "notifications:read", SCOPES_MESSAGE),  # not split into characters
        ("scopes", "", SCOPES_MESSAGE),
        ("scopes", {"notifications:read": True}, SCOPES_MESSAGE),
        ("scopes", [1], SCOPES_MESSAGE),
        ("scopes", None, SCOPES_MESSAGE),
        ("expiresAt", 1_700_000_000, "must be an ISO 8601 timestamp with a time zone or null"),
        (
            "expiresAt",
            "2027-01-01T10:00:00",
            "must be an ISO 8601 timestamp with a time zone or null",
        ),
        ("expiresAt", "", "must be an ISO 8601 timestamp with a time zone or null"),
    ],
)
def test_wrong_json_types_are_refused(field: str, value: Any, message: str) -> None:
    body: dict[str, Any] = {"name": "ci", "scopes": ["devices:read"], field: value}
    assert details(NewApiKey, body) == {field: message}


@pytest.mark.parametrize("body", [[], "name", 1, None, True, [{"name": "ci"}]])
def test_a_body_that_is_not_an_object_is_invalid_json(body: Any) -> None:
    with pytest.raises(InvalidJson, match="must be a JSON object"):
        structure_request(NewApiKey, body)


def test_duplicate_scopes_are_kept_for_the_service_to_normalise() -> None:
    key = structure_request(NewApiKey, {"name": "ci", "scopes": ["devices:read"] * 2})
    assert key.scopes == (Scope.DEVICES_READ, Scope.DEVICES_READ)


# -- structure_request: strict JSON types on ints, bools, arrays, objects ------


def test_sample_defaults() -> None:
    assert structure_request(Sample, {}) == Sample()
    assert structure_request(
        Sample, {"count": 3, "flag": True, "tags": ["a", "b"], "labels": {"k": "v"}}
    ) == Sample(count=3, flag=True, tags=("a", "b"), labels={"k": "v"})


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("count", True, "must be an integer"),
        ("count", False, "must be an integer"),
        ("count", "3", "must be an integer"),
        ("count", 3.0, "must be an integer"),
        ("count", None, "must be an integer"),
        ("count", 0, "must be from 1 to 10"),
        ("count", 11, "must be from 1 to 10"),
        ("flag", 1, "must be true or false"),
        ("flag", "true", "must be true or false"),
        ("tags", "abc", "must be an array whose items are a string"),
        ("tags", ["a", 1], "must be an array whose items are a string"),
        ("tags", {"a": "b"}, "must be an array whose items are a string"),
        ("labels", {"k": 1}, "must be an object with string values or null"),
        ("labels", ["k"], "must be an object with string values or null"),
        ("labels", "k=v", "must be an object with string values or null"),
    ],
)
def test_strict_types(field: str, value: Any, message: str) -> None:
    assert details(Sample, {field: value}) == {field: message}


def test_every_wrong_type_is_listed() -> None:
    found = details(Sample, {"count": True, "flag": 0, "tags": "xy", "labels": [], "x": 1})
    assert set(found) == {"count", "flag", "tags", "labels", "x"}


# -- structure_request: NewDevice ----------------------------------------------


def test_a_valid_web_device() -> None:
    device = structure_request(
        NewDevice,
        {"token": ENDPOINT, "platform": "web", "keys": {"p256dh": P256DH, "auth": AUTH}},
    )
    assert device == NewDevice(ENDPOINT, Platform.WEB, None, WebPushKeys(P256DH, AUTH))
    assert device_errors(device) == []


def test_new_device_lists_every_bad_field() -> None:
    found = details(
        NewDevice,
        {
            "token": "",
            "platform": "blackberry",
            "name": "x" * 101,
            "keys": {"p256dh": P256DH},
            "extra": True,
        },
    )
    assert found == {
        "extra": "is not a known field",
        "token": "must be 1 to 4096 characters",
        "platform": "must be one of: ios, android, web, webhook, live",
        "name": "must be 1 to 100 characters",
        "keys": "must be an object with the fields p256dh, auth or null",
    }


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("platform", 1),
        ("platform", "IOS"),
        ("platform", ["ios"]),
        ("token", 123),
        ("name", 5),
        ("keys", "p256dh"),
        ("keys", {"p256dh": P256DH, "auth": AUTH, "extra": "x"}),
        ("keys", {"p256dh": 1, "auth": AUTH}),
    ],
)
def test_new_device_wrong_types(field: str, value: Any) -> None:
    body: dict[str, Any] = {"token": "a" * 64, "platform": "ios", field: value}
    assert set(details(NewDevice, body)) == {field}


# -- timestamps ----------------------------------------------------------------

aware_datetimes = st.datetimes(
    min_value=datetime(1, 1, 2),
    max_value=datetime(9999, 12, 30),
    timezones=st.builds(
        timezone,
        st.integers(-(23 * 60 + 59), 23 * 60 + 59).map(lambda m: timedelta(minutes=m)),
    ),
)


def test_format_timestamp_examples() -> None:
    instant = datetime(2026, 11, 21, 10, 15, 30, 123456, tzinfo=UTC)
    assert format_timestamp(instant) == "2026-11-21T10:15:30.123Z"
    assert format_timestamp(instant.replace(microsecond=0)) == "2026-11-21T10:15:30.000Z"
    plus_two = instant.astimezone(timezone(timedelta(hours=2)))
    assert format_timestamp(plus_two) == "2026-11-21T10:15:30.123Z"
    assert maybe_timestamp(None) is None
    assert maybe_timestamp(instant) == "2026-11-21T10:15:30.123Z"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-21T10:15:30.123Z", datetime(2026, 11, 21, 10, 15, 30, 123000, tzinfo=UTC)),
        ("2026-11-21T12:15:30.123+02:00", datetime(2026, 11, 21, 10, 15, 30, 123000, tzinfo=UTC)),
        ("2026-11-21T05:15:30-05:00", datetime(2026, 11, 21, 10, 15, 30, tzinfo=UTC)),
        ("2026-11-21T10:15:30+00:00", datetime(2026, 11, 21, 10, 15, 30, tzinfo=UTC)),
        ("2026-11-22T00:45:30+14:30", datetime(2026, 11, 21, 10, 15, 30, tzinfo=UTC)),
    ],
)
def test_parse_timestamp_normalises_to_utc(text: str, expected: datetime) -> None:
    parsed = parse_timestamp(text)
    assert parsed == expected
    assert parsed.tzinfo is UTC


@pytest.mark.parametrize("text", ["2026-11-21T10:15:30", "2026-11-21", "2026-11-21T10:15:30.123"])
def test_naive_timestamps_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="time zone"):
        parse_timestamp(text)


@pytest.mark.parametrize("text", ["", "yesterday", "2026-13-01T00:00:00Z", "21/11/2026 10:00Z"])
def test_malformed_timestamps_are_refused(text: str) -> None:
    with pytest.raises(ValueError):  # noqa: PT011  (datetime's own messages vary)
        parse_timestamp(text)


@pytest.mark.parametrize("value", [None, 1_700_000_000, 1.5, ["2026-11-21T10:15:30Z"]])
def test_non_string_timestamps_are_refused(value: Any) -> None:
    with pytest.raises(TypeError, match="expected a string"):
        parse_timestamp(value)


@given(aware_datetimes)
def test_timestamp_round_trip(instant: datetime) -> None:
    text = format_timestamp(instant)
    assert TIMESTAMP_RE.match(text), text
    parsed = parse_timestamp(text)
    assert parsed == instant.replace(microsecond=instant.microsecond // 1000 * 1000)
    assert parsed.tzinfo is UTC
    assert format_timestamp(parsed) == text


@given(aware_datetimes, aware_datetimes)
def test_formatted_timestamps_sort_like_the_instants(first: datetime, second: datetime) -> None:
    if first.replace(microsecond=0) < second.replace(microsecond=0):
        assert format_timestamp(first) <= format_timestamp(second)


# -- describe and camel ----------------------------------------------------------


@pytest.mark.parametrize(
    ("tp", "text"),
    [
        (str, "must be a string"),
        (int, "must be an integer"),
        (bool, "must be true or false"),
        (datetime, "must be an ISO 8601 timestamp with a time zone"),
        (str | None, "must be a string or null"),
        (int | str, "must be an integer or a string"),
        (Platform, "must be one of: ios, android, web, webhook, live"),
        (tuple[str, ...], "must be an array whose items are a string"),
        (list[int], "must be an array whose items are an integer"),
        (dict[str, str], "must be an object with string values"),
        (Mapping[str, str], "must be an object with string values"),
        (WebPushKeys, "must be an object with the fields p256dh, auth"),
        (WebPushKeys | None, "must be an object with the fields p256dh, auth or null"),
        (float, "has the wrong type"),
    ],
)
def test_describe(tp: Any, text: str) -> None:
    assert describe(tp) == text


@pytest.mark.parametrize(
    ("name", "json_name"),
    [
        ("name", "name"),
        ("expires_at", "expiresAt"),
        ("target_device_token", "targetDeviceToken"),
        ("p256dh", "p256dh"),
    ],
)
def test_camel(name: str, json_name: str) -> None:
    assert camel(name) == json_name


# -- device_errors ---------------------------------------------------------------


def fields(device: NewDevice) -> set[str]:
    return {e.field for e in device_errors(device)}


@pytest.mark.parametrize(
    "token",
    ["a" * 64, "0123456789ABCDEFabcdef" * 3 + "00", "f" * 32, "ab" * 100],
)
def test_ios_hex_tokens_are_accepted(token: str) -> None:
    assert device_errors(NewDevice(token, Platform.IOS)) == []


@pytest.mark.parametrize(
    "token",
    [
        "g" * 64,  # not hex
        "a" * 63 + "z",
        "a" * 65,  # odd length
        "a" * 30,  # too short
        "a" * 62 + " ",
        "0x" + "a" * 62,
        ENDPOINT,
    ],
)
def test_ios_bad_tokens_are_refused(token: str) -> None:
    assert device_errors(NewDevice(token, Platform.IOS)) == [
        FieldError("token", "must be an APNs device token in hex")
    ]


@pytest.mark.parametrize("token", ["fcm-token:APA91b" + "x" * 100, "anything", ENDPOINT])
def test_android_takes_any_token(token: str) -> None:
    assert device_errors(NewDevice(token, Platform.ANDROID)) == []


def test_web_without_keys_is_refused() -> None:
    assert device_errors(NewDevice(ENDPOINT, Platform.WEB)) == [
        FieldError("keys", "is required for web devices (p256dh and auth)")
    ]


def test_web_with_padded_keys_is_accepted() -> None:
    keys = WebPushKeys(b64url(RAW_POINT, padded=True), b64url(bytes(16), padded=True))
    assert device_errors(NewDevice(ENDPOINT, Platform.WEB, keys=keys)) == []


@given(st.binary(max_size=100).filter(lambda raw: len(raw) != 65))
def test_web_p256dh_of_the_wrong_length_is_refused(raw: bytes) -> None:
    device = NewDevice(ENDPOINT, Platform.WEB, keys=WebPushKeys(b64url(raw), AUTH))
    assert device_errors(device) == [
        FieldError("keys.p256dh", "must be a base64url uncompressed P-256 point")
    ]


@given(st.binary(max_size=40).filter(lambda raw: len(raw) != 16))
def test_web_auth_of_the_wrong_length_is_refused(raw: bytes) -> None:
    device = NewDevice(ENDPOINT, Platform.WEB, keys=WebPushKeys(P256DH, b64url(raw)))
    assert device_errors(device) == [FieldError("keys.auth", "must be a base64url 16-byte secret")]


@pytest.mark.parametrize("auth", ["", "@@@@", "a", AUTH[:-1]])
def test_web_auth_that_is_not_base64url_is_refused(auth: str) -> None:
    device = NewDevice(ENDPOINT, Platform.WEB, keys=WebPushKeys(P256DH, auth))
    assert fields(device) == {"keys.auth"}


def test_web_with_every_problem() -> None:
    device = NewDevice("not a url", Platform.WEB, keys=WebPushKeys("", ""))
    assert fields(device) == {"token", "keys.p256dh", "keys.auth"}


@pytest.mark.parametrize("platform", [Platform.WEB, Platform.WEBHOOK])
@pytest.mark.parametrize(
    "token",
    ["not a url", "ftp://example.com/x", "https://", "//example.com/x", "http://[::1", "a" * 64],
)
def test_web_and_webhook_tokens_must_be_http_urls(platform: Platform, token: str) -> None:
    keys = WebPushKeys(P256DH, AUTH) if platform is Platform.WEB else None
    assert device_errors(NewDevice(token, platform, keys=keys)) == [
        FieldError("token", "must be an http or https URL")
    ]


@pytest.mark.parametrize(
    "token", ["https://ntfy.example.com/up123", "http://127.0.0.1:8080/hook", "HTTPS://A.B/c"]
)
def test_webhook_urls_are_accepted(token: str) -> None:
    # The private-address check needs the network: the service does it, not device_errors.
    assert device_errors(NewDevice(token, Platform.WEBHOOK)) == []


@pytest.mark.parametrize(
    ("platform", "token"),
    [
        (Platform.IOS, "a" * 64),
        (Platform.ANDROID, "fcm-token"),
        (Platform.WEBHOOK, "https://example.com/hook"),
    ],
)
def test_keys_on_non_web_devices_are_refused(platform: Platform, token: str) -> None:
    device = NewDevice(token, platform, keys=WebPushKeys(P256DH, AUTH))
    assert device_errors(device) == [FieldError("keys", "is only for web devices")]


def test_web_keys_with_characters_outside_base64url_are_refused() -> None:
    keys = WebPushKeys(P256DH + "!!!!", AUTH + "$$$$")
    assert fields(NewDevice(ENDPOINT, Platform.WEB, keys=keys)) == {"keys.p256dh", "keys.auth"}


def test_web_p256dh_must_be_an_uncompressed_point_on_the_curve() -> None:
    compressed_marker = WebPushKeys(b64url(b"\x02" + RAW_POINT[1:]), AUTH)
    assert fields(NewDevice(ENDPOINT, Platform.WEB, keys=compressed_marker)) == {"keys.p256dh"}
    off_curve = WebPushKeys(b64url(b"\x04" + bytes(64)), AUTH)
    assert fields(NewDevice(ENDPOINT, Platform.WEB, keys=off_curve)) == {"keys.p256dh"}


@given(
    st.text(min_size=1, max_size=20),
    st.text(max_size=40),
    st.sampled_from(list(NotificationStatus)),
    st.datetimes(timezones=st.just(UTC)),
    st.integers(min_value=0, max_value=10_000),
)
def test_json_of_is_the_json_of_the_view(
    title: str, body: str, status: NotificationStatus, due: datetime, targeted: int
) -> None:
    # The answer of a create and of a batch, made without the views in between.
    created = attrs.evolve(
        gateway_notification(title=title, body=body, scheduled_at=due),
        status=status,
        devices_targeted=targeted,
    )
    assert json_of(NotificationCreatedView, created) == to_json(NotificationCreatedView.of(created))
    other = attrs.evolve(created, id="ntf_02")
    assert BatchCreatedView.json_of([created, other]) == to_json(
        BatchCreatedView.of([created, other])
    )


def _tupled(names: list[str]) -> tuple[str, ...]:
    return tuple(names)


def test_json_of_refuses_a_view_that_converts_what_it_is_given() -> None:
    @attrs.frozen
    class Converting(View):
        names: tuple[str, ...] = attrs.field(converter=_tupled)

    with pytest.raises(TypeError, match=r"Converting converts \['names'\]"):
        json_of(Converting, Converting(["a"]))
