"""The recipient's settings and the deliveries they hold, as the store keeps them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pushcore.domain.recipient import Mute, RecipientSettings


class RecipientRepository(Protocol):
    """Zones, quiet hours, snoozes and mutes; HELD deliveries."""

    def settings(self, account_id: str) -> RecipientSettings:
        """The account's settings (the defaults for an account never seen)."""
        ...

    def settings_of(self, account_ids: Sequence[str]) -> dict[str, RecipientSettings]:
        """Each account's settings (the defaults for one never seen), in one lookup."""
        ...

    def settings_many(self, account_ids: Sequence[str]) -> dict[str, RecipientSettings]:
        """The settings of those of ``account_ids`` with quiet hours or a snooze set."""
        ...

    def save(self, account_id: str, settings: RecipientSettings) -> None:
        """Store the account's settings (the account exists)."""
        ...

    def mutes(
        self, account_ids: Sequence[str], stream_ids: Sequence[str]
    ) -> dict[tuple[str, str], Mute]:
        """The subscriptions of these accounts to these streams: (account, stream) -> mute."""
        ...

    def mute(self, subscription_id: str, account_id: str, mute: Mute) -> bool:
        """Set the account's subscription's mute; False when it has no such subscription."""
        ...

    def subscription_mute(self, subscription_id: str) -> Mute:
        """A subscription's mute (the defaults when it has none)."""
        ...

    def hold(self, delivery_ids: Sequence[str], owner: str, until: datetime) -> int:
        """Claimed deliveries wait, unsent, until ``until`` (HELD); how many."""
        ...

    def release_account(self, account_id: str) -> int:
        """Hand what the account's devices have HELD back to the queue; how many."""
        ...

    def held_for_devices(
        self,
        device_ids: Sequence[str],
        since: datetime | None = None,
        keys: Sequence[tuple[str, str]] = (),
    ) -> list[tuple[str, str, str, datetime]]:
        """(delivery, notification, device, due) of these devices' held, unsent deliveries,
        and those due since ``since`` of ``keys`` (sender, collapse key) to go or gone."""
        ...
