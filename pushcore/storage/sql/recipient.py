"""The recipient's settings (zone, quiet hours, snooze; a subscription's mute) and the
deliveries they hold (migration 0024)."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pushcore.domain.localtime import DEFAULT_ZONE
from pushcore.domain.quiet import QuietHours
from pushcore.domain.recipient import (
    Mute,
    RecipientSettings,
    parse_quiet_hours,
    quiet_hours_json,
)
from pushcore.storage.sql.accounts import Repository

_SETTINGS = "id, time_zone, quiet_hours, snooze_until"


@functools.lru_cache(maxsize=4096)
def _quiet_hours(stored: str) -> QuietHours | None:
    # Read for every delivery a claim screens (a release of 100,000 reads as many
    # accounts' settings), and most people's quiet hours are one of a few: each
    # stored text is parsed once (the result is frozen, so it may be shared).
    return parse_quiet_hours(json.loads(stored))


class Recipients(Repository):
    def _decode(self, row: Sequence[Any]) -> RecipientSettings:
        _, zone, hours, snooze = row
        return RecipientSettings(
            time_zone=zone or DEFAULT_ZONE,
            quiet_hours=_quiet_hours(hours) if hours else None,
            snooze_until=self._dialect.opt_read_time(snooze),
        )

    def settings(self, account_id: str) -> RecipientSettings:
        """The account's settings (the defaults for an account never seen)."""
        rows = self._sql.all(f"SELECT {_SETTINGS} FROM accounts WHERE id = ?", (account_id,))  # noqa: S608
        return self._decode(rows[0]) if rows else RecipientSettings()

    def settings_of(self, account_ids: Sequence[str]) -> dict[str, RecipientSettings]:
        """Each account's settings (the defaults for one never seen), in one lookup."""
        rows = self._sql.all(
            f"SELECT {_SETTINGS} FROM accounts WHERE id = ANY(?)",  # noqa: S608
            (self._dialect.array(sorted(account_ids)),),
        )
        found = {row[0]: self._decode(row) for row in rows}
        return {a: found.get(a) or RecipientSettings() for a in account_ids}

    def settings_many(self, account_ids: Sequence[str]) -> dict[str, RecipientSettings]:
        """The settings of those of ``account_ids`` that have quiet hours or a snooze set,
        in one primary-key lookup; the others have nothing to screen."""
        if not account_ids:
            return {}
        rows = self._sql.all(
            f"SELECT {_SETTINGS} FROM accounts WHERE id = ANY(?)"  # noqa: S608
            " AND (quiet_hours IS NOT NULL OR snooze_until IS NOT NULL)",
            (self._dialect.array(sorted(account_ids)),),
        )
        return {row[0]: self._decode(row) for row in rows}

    def save(self, account_id: str, settings: RecipientSettings) -> None:
        """Store the account's settings (the account exists)."""
        hours = quiet_hours_json(settings.quiet_hours)
        self._sql.run(
            "UPDATE accounts SET time_zone = ?, quiet_hours = ?, snooze_until = ? WHERE id = ?",
            (
                settings.time_zone,
                None if hours is None else json.dumps(hours, separators=(",", ":")),
                self._dialect.opt_time(settings.snooze_until),
                account_id,
            ),
        )

    def mutes(
        self, account_ids: Sequence[str], stream_ids: Sequence[str]
    ) -> dict[tuple[str, str], Mute]:
        """The subscriptions of these accounts to these streams, as (account, stream) ->
        mute; a pair with no row is unsubscribed."""
        if not account_ids or not stream_ids:
            return {}
        rows = self._sql.all(
            "SELECT account_id, stream_id, muted_until, allow_critical FROM subscriptions"
            " WHERE account_id = ANY(?) AND stream_id = ANY(?)",
            (self._dialect.array(sorted(account_ids)), self._dialect.array(sorted(stream_ids))),
        )
        return {
            (a, s): Mute(self._dialect.opt_read_time(until), bool(allow))
            for a, s, until, allow in rows
        }

    def mute(self, subscription_id: str, account_id: str, mute: Mute) -> bool:
        """Set the account's subscription's mute; False when it has no such subscription."""
        cursor = self._sql.run(
            "UPDATE subscriptions SET muted_until = ?, allow_critical = ?"
            " WHERE id = ? AND account_id = ?",
            (
                self._dialect.opt_time(mute.muted_until),
                mute.allow_critical,
                subscription_id,
                account_id,
            ),
        )
        return bool(cursor.rowcount > 0)

    def subscription_mute(self, subscription_id: str) -> Mute:
        """A subscription's mute (the defaults when it has none)."""
        rows = self._sql.all(
            "SELECT muted_until, allow_critical FROM subscriptions WHERE id = ?",
            (subscription_id,),
        )
        if not rows:
            return Mute()
        until, allow = rows[0]
        return Mute(self._dialect.opt_read_time(until), bool(allow))

    def hold(self, delivery_ids: Sequence[str], owner: str, until: datetime) -> int:
        """Claimed deliveries wait, unsent, until ``until`` (HELD); how many ``owner`` held."""
        # Neither a count (HELD counts as pending) nor an attempt: nothing was sent.
        cursor = self._sql.run(
            "UPDATE deliveries SET status = 'HELD', held_until = ?, attempts = attempts - 1,"
            " lease_owner = NULL, lease_until = NULL"
            " WHERE id = ANY(?) AND status = 'IN_FLIGHT' AND lease_owner = ?",
            (self._dialect.time(until), self._dialect.array(delivery_ids), owner),
        )
        return int(cursor.rowcount)

    def release_account(self, account_id: str) -> int:
        """Hand what the account's devices have HELD back to the queue, to be screened
        again by the next claim (the settings changed); how many."""
        cursor = self._sql.run(
            "UPDATE deliveries SET status = 'PENDING' WHERE status = 'HELD' AND device_id IN"
            " (SELECT id FROM devices WHERE account_id = ?)",
            (account_id,),
        )
        return int(cursor.rowcount)

    def held_for_devices(
        self,
        device_ids: Sequence[str],
        since: datetime | None = None,
        keys: Sequence[tuple[str, str]] = (),
    ) -> list[tuple[str, str, str, datetime]]:
        """(delivery, notification, device, due) of every delivery of these devices that
        was held and is not yet sent, and of every one due since ``since`` of a
        notification with one of ``keys`` (sender, collapse key) that is to go or went:
        what a released one's collapse key is compared with."""
        devices = self._dialect.array(sorted(device_ids))
        rows = self._sql.all(
            "SELECT id, notification_id, device_id, due_at FROM deliveries"
            " WHERE device_id = ANY(?) AND held_until IS NOT NULL"
            " AND status IN ('HELD', 'PENDING', 'IN_FLIGHT')",
            (devices,),
        )
        # A newer one of the key that was not held (a bypass, a mute's critical) may have
        # reached the device already: the held older must not follow it. Found through
        # the key's notifications (indexed), not a scan of the devices' history.
        for account_id, key in keys if since is not None else ():
            rows += self._sql.all(
                "SELECT d.id, d.notification_id, d.device_id, d.due_at FROM notifications n"
                " JOIN deliveries d ON d.notification_id = n.id"
                " WHERE n.account_id = ? AND n.collapse_key = ? AND d.device_id = ANY(?)"
                " AND d.kind = 'notification' AND d.held_until IS NULL AND d.due_at >= ?"
                " AND d.status IN ('PENDING', 'IN_FLIGHT', 'DELIVERED')",
                (account_id, key, devices, self._dialect.opt_time(since)),
            )
        return [(d, n, dev, self._dialect.read_time(due)) for d, n, dev, due in rows]
