"""The `live` platform: an open app or `pushctl listen` that follows the live channel.

There is nothing to send. A delivery to a live device succeeds once its
notification is in the account's inbox, and it always is by the time the
engine hands the delivery over: the claim that leased the delivery wrote the
owner's entry in its own transaction, and a stream send wrote its
subscribers' entries when it was sent (storage/sql/inbox.py). The live
channel then carries the entry to every open app of the account.
"""

from __future__ import annotations

from collections.abc import Sequence

from pushcore.domain.outcomes import Delivered, Dispatch, Outcome


class LiveGateway:
    """Answers Delivered for every dispatch: the entry is in the inbox already."""

    async def send(self, dispatches: Sequence[Dispatch]) -> Sequence[Outcome]:
        """Delivered, each."""
        return [Delivered() for _ in dispatches]

    async def aclose(self) -> None:
        """Nothing to close."""
