"""The recipient's settings as API JSON: the account's `timeZone`, `quietHours` and
`snoozeUntil`, and a subscription's mute (API.md, "The recipient's time")."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, ClassVar

import attrs

from pushcore.converter._base import parse_timestamp
from pushcore.converter._views import View, copy_fields, ident
from pushcore.converter.streams import StreamSummaryView
from pushcore.domain.errors import FieldError, InvalidJson, ValidationError
from pushcore.domain.localtime import DEFAULT_ZONE
from pushcore.domain.model import StreamView, Subscription
from pushcore.domain.quiet import DAYS, QuietMode
from pushcore.domain.recipient import (
    BYPASSABLE,
    Mute,
    RecipientSettings,
    SettingsPatch,
    parse_quiet_hours,
    parse_zone,
    quiet_hours_json,
    zone_names,
)
from pushcore.domain.validation import about

_HHMM = "^([01][0-9]|2[0-3]):[0-5][0-9]$"
_FIELDS = {"timeZone": "time_zone", "quietHours": "quiet_hours", "snoozeUntil": "snooze_until"}


@attrs.frozen
class QuietHoursView(View):
    """When the person's devices wait (or go quietly): a period starts on each listed day
    at `start` and ends at the next `end` (an end before the start crosses midnight)."""

    start: str = attrs.field(metadata=about("Local time HH:MM.", example="22:00", pattern=_HHMM))
    end: str = attrs.field(
        metadata=about("Local time HH:MM; not the start.", example="07:00", pattern=_HHMM)
    )
    days: tuple[str, ...] = attrs.field(
        default=DAYS,
        metadata=about(
            "The days a period starts on (default every day).",
            minItems=1,
            items={"type": "string", "enum": list(DAYS)},
        ),
    )
    mode: str = attrs.field(
        default=QuietMode.HOLD.value,
        metadata=about(
            "`hold` (wait until the end) or `silent` (go now, quietly).",
            enum=[m.value for m in QuietMode],
        ),
    )
    bypass: tuple[str, ...] = attrs.field(
        default=("critical",),
        metadata=about(
            "Priorities that go out as usual (default critical).",
            items={"type": "string", "enum": [p.value for p in BYPASSABLE]},
        ),
    )


def quiet_hours_view(settings: RecipientSettings) -> QuietHoursView | None:
    """The view of the settings' quiet hours, or None."""
    found = quiet_hours_json(settings.quiet_hours)
    if found is None:
        return None
    return QuietHoursView(
        found["start"], found["end"], tuple(found["days"]), found["mode"], tuple(found["bypass"])
    )


@attrs.frozen
class AccountPatch:
    """PATCH /api/account: each setting given is replaced whole; the others are kept."""

    time_zone: str = attrs.field(
        default=DEFAULT_ZONE,
        metadata=about(
            "An IANA time zone name (an offset is refused).",
            example="Europe/Berlin",
            enum=zone_names(),
        ),
    )
    quiet_hours: QuietHoursView | None = attrs.field(
        default=None, metadata=about("Quiet hours, or null for none.")
    )
    snooze_until: datetime | None = attrs.field(
        default=None,
        metadata=about("Every device delivery is held until then (bypass as set); or null."),
    )


def parse_account_patch(body: Any) -> SettingsPatch:
    """The settings a PATCH /api/account body gives; ValidationError naming every bad one."""
    if not isinstance(body, Mapping):
        raise InvalidJson("Request body must be a JSON object")
    errors = [FieldError(str(k), "is not a known field") for k in body if k not in _FIELDS]
    parsers: dict[str, Callable[[Any], Any]] = {
        "timeZone": lambda v: DEFAULT_ZONE if v is None else parse_zone(v),
        "quietHours": parse_quiet_hours,
        "snoozeUntil": lambda v: None if v is None else _timestamp(v),
    }
    values: dict[str, Any] = {}
    for name, parse in parsers.items():
        if name not in body:
            continue
        try:
            values[_FIELDS[name]] = parse(body[name])
        except (ValueError, TypeError) as exc:
            errors.append(FieldError(name, str(exc)))
    if errors:
        raise ValidationError(errors)
    return SettingsPatch(frozenset(values), **values)


def _timestamp(value: Any) -> datetime:
    try:
        return parse_timestamp(value)
    except (ValueError, TypeError):
        raise ValueError(
            "must be a timestamp with an offset (2026-12-24T09:00:00Z) or null"
        ) from None


@attrs.frozen
class SubscriptionMute:
    """PATCH /api/streams/subscriptions/:id: mute a stream you follow."""

    muted_until: datetime | None = attrs.field(
        default=None,
        metadata=about("No device gets the stream's sends until then (the inbox does); null."),
    )
    allow_critical: bool = attrs.field(
        default=True,
        metadata=about(
            "Critical sends go through the mute and quiet hours; false: treated as high."
        ),
    )

    def mute(self) -> Mute:
        """The mute it sets."""
        return Mute(self.muted_until, self.allow_critical)


@attrs.frozen
class MutedSubscriptionView(View):
    """A subscription with its stream and its mute, whatever it is (a mute's answer)."""

    schema_name: ClassVar[str] = "SubscriptionWithMute"

    id: str = attrs.field(metadata=ident("sub", "subscription"))
    stream: StreamSummaryView
    created_at: datetime = attrs.field(metadata=about("When the caller subscribed."))
    muted_until: datetime | None = attrs.field(
        metadata=about("No device gets the stream's sends until then; null: not muted.")
    )
    allow_critical: bool = attrs.field(
        metadata=about("Whether critical sends go through the mute and quiet hours.")
    )

    @classmethod
    def of(cls, subscription: Subscription, view: StreamView) -> MutedSubscriptionView:
        """The view of a subscription to the stream ``view``."""
        return copy_fields(cls, subscription, stream=StreamSummaryView.of(view))
