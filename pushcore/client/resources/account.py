"""client.account: the signed-in account and its settings (a user token): time zone,
quiet hours and snooze (API.md, "The recipient's time")."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pushcore.client._call import Auth, Call, one
from pushcore.client._resource import Resource, S_co, endpoint
from pushcore.converter import AccountView, converter


class Unset(enum.Enum):
    """A setting left as it is (None clears one)."""

    UNSET = "unset"


UNSET = Unset.UNSET


def get() -> Call[AccountView]:
    """The signed-in account, with its time zone, quiet hours and snooze."""
    return Call("GET", "/api/account", Auth.USER, one(AccountView))


def update(
    *,
    time_zone: str | Unset = UNSET,
    quiet_hours: Mapping[str, Any] | Unset | None = UNSET,
    snooze_until: datetime | str | Unset | None = UNSET,
) -> Call[AccountView]:
    """Replace the settings given, each whole (None clears quiet hours or a snooze);
    ``quiet_hours`` as the API writes it: ``{"start": "22:00", "end": "07:00", "days": [...],
    "mode": "hold", "bypass": ["critical"]}``."""
    given = {"timeZone": time_zone, "quietHours": quiet_hours, "snoozeUntil": snooze_until}
    data = {
        name: converter.unstructure(dict(v) if isinstance(v, Mapping) else v)
        for name, v in given.items()
        if v is not UNSET
    }
    return Call("PATCH", "/api/account", Auth.USER, one(AccountView), data)


class Account(Resource[S_co]):
    """``client.account`` (its methods awaitable on AsyncClient)"""

    get = endpoint(get)
    update = endpoint(update)
