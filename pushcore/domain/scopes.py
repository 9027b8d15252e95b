"""API key scopes and the check, as values (Success | Failure) testable without a request."""

from __future__ import annotations

import enum
from collections.abc import Iterable

import attrs


class Scope(enum.StrEnum):
    """What an API key may do."""

    NOTIFICATIONS_READ = "notifications:read"
    NOTIFICATIONS_WRITE = "notifications:write"
    DEVICES_READ = "devices:read"
    DEVICES_WRITE = "devices:write"
    WEBHOOKS_READ = "webhooks:read"
    WEBHOOKS_WRITE = "webhooks:write"


ALL_SCOPES: tuple[Scope, ...] = tuple(Scope)


@attrs.frozen
class Success:
    """The check passed."""


@attrs.frozen
class Failure:
    """The check failed; ``reason`` is the message to show."""

    reason: str


Outcome = Success | Failure


def check_scope(granted: Iterable[Scope], required: Scope) -> Outcome:
    """Success when ``required`` is among ``granted``."""
    if required in frozenset(granted):
        return Success()
    return Failure(f"API key missing required scope: {required.value}")


def normalise_scopes(scopes: Iterable[Scope]) -> tuple[Scope, ...]:
    """Scopes without duplicates, in the canonical order of :data:`ALL_SCOPES`."""
    wanted = frozenset(scopes)
    return tuple(s for s in ALL_SCOPES if s in wanted)
