"""The recipient's time in the engine's claim: which claimed deliveries go out now,
which go quietly, which wait (HELD) and which a mute ends (API.md, "The recipient's time").

The decision lives in the claim: a delivery is screened when it falls due, with the
settings of the account that owns its device (a stream send's subscriber, not its
sender), read for the whole batch in one primary-key lookup (and the batch's stream
subscriptions in a second, only for stream sends). A held delivery leaves the claim
unsent, due again at the end of the quiet; when claimed then it is screened again.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime

import attrs

from pushcore.domain.model import Notification, Priority
from pushcore.domain.outcomes import Dispatch
from pushcore.domain.recipient import (
    MUTED,
    SCREENED,
    Decision,
    Hold,
    Mute,
    Muted,
    RecipientSettings,
    decide,
    superseded,
)
from pushcore.domain.states import DeliveryStatus
from pushcore.domain.withdraw import is_withdrawal
from pushcore.ports import Transaction

_DEFAULT = RecipientSettings()
SUPERSEDED = "superseded"
EXPIRED = "expired"


@attrs.frozen
class Screened:
    """What a claim sends, and the notifications whose deliveries it ended (with why)."""

    send: list[Dispatch]
    ended: dict[str, str]
    held: int = 0


def collapse_key(notification: Notification) -> str | None:
    """The notification's collapse key, where this version of pushcore has one."""
    key = getattr(notification, "collapse_key", None)
    return key if isinstance(key, str) else None


def _screened(dispatch: Dispatch) -> bool:
    # A withdrawal removes what was shown, silently: nothing to hold or mute.
    return dispatch.device.platform in SCREENED and not is_withdrawal(dispatch.delivery)


def _expired(notification: Notification, now: datetime) -> bool:
    expires = getattr(notification, "expires_at", None)
    return isinstance(expires, datetime) and expires <= now


def _until(end: datetime, notification: Notification) -> datetime:
    expires = getattr(notification, "expires_at", None)
    return min(end, expires) if isinstance(expires, datetime) else end


def screen(tx: Transaction, dispatches: Sequence[Dispatch], now: datetime, owner: str) -> Screened:
    """Decide each claimed dispatch by its recipient's settings, in the claim's transaction."""
    screened = [d for d in dispatches if _screened(d)]
    if not screened:
        return Screened(list(dispatches), {})
    settings = tx.recipients.settings_many(sorted({d.device.account_id for d in screened}))
    streamed = [d for d in screened if d.notification.stream is not None]
    mutes: dict[tuple[str, str], Mute] = {}
    if streamed:
        mutes = tx.recipients.mutes(
            sorted({d.device.account_id for d in streamed}),
            sorted({d.notification.stream.id for d in streamed if d.notification.stream}),
        )
    gone = _replaced(tx, [d for d in screened if d.delivery.held_until is not None])
    send: list[Dispatch] = []
    holds: dict[datetime, list[str]] = defaultdict(list)
    ended: dict[str, str] = {}
    # A fan-out's batch (or a release's) is many deliveries of one priority due at one
    # time, to people most of whom share their settings: decide once for each.
    decided: dict[tuple[RecipientSettings, Mute | None, Priority, datetime], Decision] = {}
    for dispatch in dispatches:
        delivery, notification = dispatch.delivery, dispatch.notification
        if not _screened(dispatch):
            send.append(dispatch)
            continue
        released = delivery.held_until is not None
        if delivery.id in gone or (released and _expired(notification, now)):
            why = SUPERSEDED if delivery.id in gone else EXPIRED
            status = getattr(DeliveryStatus, why.upper(), DeliveryStatus.CANCELLED)
            tx.deliveries.settle(delivery.id, owner, status, why, now)
            ended[notification.id] = why
            continue
        account = dispatch.device.account_id
        stream = notification.stream
        mute = None if stream is None else mutes.get((account, stream.id), Mute())
        at = max(delivery.due_at, now)
        found = settings.get(account, _DEFAULT)
        key = (found, mute, notification.priority, at)
        decision = decided.get(key)
        if decision is None:
            decision = decided[key] = decide(found, mute, notification.priority, at)
        if isinstance(decision, Hold):
            # Held no later than its expiry: it ends EXPIRED then, not at the end of the quiet.
            holds[_until(decision.until, notification)].append(delivery.id)
        elif isinstance(decision, Muted):
            tx.deliveries.settle(delivery.id, owner, DeliveryStatus.CANCELLED, MUTED, now)
            ended[notification.id] = MUTED
        else:
            send.append(attrs.evolve(dispatch, quiet=True) if decision.quiet else dispatch)
    held = sum(tx.recipients.hold(ids, owner, until) for until, ids in holds.items())
    return Screened(send, ended, held)


def _sender_key(notification: Notification) -> str | None:
    # A key names one thing within one sending account: two senders' "score" differ.
    key = collapse_key(notification)
    return None if key is None else f"{notification.account_id} {key}"


def _replaced(tx: Transaction, released: Sequence[Dispatch]) -> set[str]:
    """The released deliveries a newer one (held, or gone or going since) of the same
    device, sender and collapse key replaces (none where there is no collapse key)."""
    keyed = [d for d in released if collapse_key(d.notification) is not None]
    if not keyed:
        return set()
    since = min(d.delivery.due_at for d in keyed)
    keys = sorted({(d.notification.account_id, collapse_key(d.notification) or "") for d in keyed})
    rows = tx.recipients.held_for_devices(sorted({d.device.id for d in keyed}), since, keys)
    notifications = {n.id: n for n in tx.notifications.by_ids(sorted({r[1] for r in rows}))}
    candidates = [
        (delivery, device, _sender_key(n) if (n := notifications.get(nid)) else None, due)
        for delivery, nid, device, due in rows
    ]
    mine = {d.delivery.id for d in keyed}
    return superseded(candidates) & mine
