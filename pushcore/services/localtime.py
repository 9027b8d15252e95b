"""Local-time sends (`deliverAt`): when each recipient's deliveries fall due.

The rule is the domain's (pushcore/domain/localtime.py); this reads the zones it
needs in the caller's transaction: the owner's for an account's own
notification (all its devices are its own), each subscriber's for a stream send.
"""

from __future__ import annotations

from datetime import datetime

from pushcore.domain.errors import FieldError, ValidationError
from pushcore.domain.expiry import expiry_errors
from pushcore.domain.inputs import NewNotification
from pushcore.domain.localtime import LocalTime, deliver_at_errors, due_by_zone
from pushcore.domain.scheduling import resolve_due_time
from pushcore.domain.timefmt import in_milliseconds
from pushcore.ports import Transaction


def timing_errors(request: NewNotification, now: datetime) -> list[FieldError]:
    """A local-time request's own problems: another timing beside it, a date too far."""
    deliver_at = request.deliver_at
    if deliver_at is None:
        return []
    given = [
        name
        for name, value in (
            ("delay", request.delay),
            ("customDelay", request.custom_delay),
            ("scheduledAt", request.scheduled_at),
        )
        if value is not None
    ]
    if given:
        names = ", ".join(given)
        return [FieldError("deliverAt", f"give deliverAt or {names}, not both")]
    return deliver_at_errors(deliver_at, now)


def own_due(tx: Transaction, account_id: str, deliver_at: LocalTime, now: datetime) -> datetime:
    """When ``deliver_at`` falls due in the account's own zone."""
    zone = tx.recipients.settings(account_id).time_zone
    return due_by_zone(deliver_at, [zone], now)[zone]


def request_due(
    tx: Transaction, account_id: str, request: NewNotification, now: datetime
) -> datetime:
    """When the account's own notification ``request`` is due; ValidationError when its
    ``expiresAt`` is not after that (known only once the zone is)."""
    if request.deliver_at is None:
        return in_milliseconds(
            resolve_due_time(now, request.delay, request.custom_delay, request.scheduled_at)
        )
    due = own_due(tx, account_id, request.deliver_at, now)
    errors = expiry_errors(due, request.ttl, request.expires_at)
    if errors:
        raise ValidationError(errors)
    return due
