"""Store ports of streams and subscriptions.

Raises, besides what a docstring says: the database's own errors when it
fails, ValueError for a naive datetime.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from pushcore.domain.model import Device, Stream, StreamView, Subscription


class StreamRepository(Protocol):
    """Streams. A deleted stream is gone for the API but keeps its code taken forever."""

    def add(self, stream: Stream) -> None:
        """Insert a stream; KeyError when its code was ever used (a collision: draw again).

        The transaction stays usable after the KeyError."""
        ...

    def get(self, account_id: str, stream_id: str) -> StreamView | None:
        """The account's live stream with this id, or None."""
        ...

    def by_code(self, code: str) -> StreamView | None:
        """The live stream with this code (any account), or None."""
        ...

    def list(self, account_id: str) -> Sequence[StreamView]:
        """The account's live streams, newest first."""
        ...

    def count(self, account_id: str) -> int:
        """How many live streams the account has (for its plan's limit: take
        ``tx.locks.plan_limits`` first)."""
        ...

    def delete(self, account_id: str, stream_id: str, at: datetime) -> bool:
        """Delete the stream and its subscriptions; False when there is no such stream."""
        ...

    def subscriber_devices(self, stream_id: str) -> Sequence[Device]:
        """The active devices of every subscriber of the stream."""
        ...


class SubscriptionRepository(Protocol):
    """Subscriptions of users to streams."""

    def add(self, subscription: Subscription) -> None:
        """Insert; KeyError when the account already subscribes to that stream."""
        ...

    def get(self, account_id: str, subscription_id: str) -> Subscription | None:
        """The account's subscription with this id, or None."""
        ...

    def find(self, account_id: str, stream_id: str) -> Subscription | None:
        """The account's subscription to the stream, or None."""
        ...

    def list(self, account_id: str) -> Sequence[tuple[Subscription, StreamView]]:
        """The account's subscriptions with their streams, newest first."""
        ...

    def delete(self, account_id: str, subscription_id: str) -> bool:
        """Remove the subscription; False when the account has no such subscription."""
        ...
