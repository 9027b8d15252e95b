"""The release of what quiet hours held, in slices, beside the work that falls due.

When a quiet ends, everything it held falls due at once (100,000 deliveries
at the end of a night). Claimed as fast as the engine's in-flight cap allows,
they would fill it, and a notification of anyone else falling due meanwhile
would wait for a slice of the release to be sent and recorded before any
claim could take it. So released deliveries may fill only a share of the cap
(``EngineConfig.release_share``): the rest is always there for due work, which
each claim takes first (storage/sql/queue.py, ``claim_due``).
"""

from __future__ import annotations

from collections.abc import Container, Iterable

from pushcore.delivery.config import EngineConfig
from pushcore.domain.outcomes import Dispatch


class ReleaseRoom:
    """How many more released deliveries this engine may take into flight."""

    def __init__(self, config: EngineConfig) -> None:
        self._cap = max(1, int(config.max_in_flight * config.release_share))
        self._batch = max(1, config.release_batch)
        self._flying: set[str] = set()

    def room(self, in_flight: Container[str]) -> int:
        """The room left for the next claim, given the ids the engine still holds (the
        others were recorded)."""
        self._flying = {i for i in self._flying if i in in_flight}
        return max(0, min(self._batch, self._cap - len(self._flying)))

    def claimed(self, dispatches: Iterable[Dispatch]) -> int:
        """Note the released ones (their delivery has a ``heldUntil``) among a claim's;
        how many there were."""
        released = [d.delivery.id for d in dispatches if d.delivery.held_until is not None]
        self._flying.update(released)
        return len(released)
