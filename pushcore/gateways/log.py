"""The log gateway: for platforms without credentials.

It records and logs each delivery it is given, and fails it with a reason
that says what to configure, so a missing credential shows up in the
notification's failureReason rather than as silence.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Sequence

from pushcore.domain.outcomes import Dispatch, Failed, Outcome

log = logging.getLogger("pushcore.delivery")


class LogGateway:
    """Logs, records (the last ``keep``) and fails every dispatch with ``reason``."""

    def __init__(self, reason: str, keep: int = 1000) -> None:
        self.reason = reason
        self.records: deque[Dispatch] = deque(maxlen=keep)

    async def send(self, dispatches: Sequence[Dispatch]) -> Sequence[Outcome]:
        """Fail each dispatch with the configured reason."""
        for dispatch in dispatches:
            self.records.append(dispatch)
            log.warning(
                "not delivered: notification %s to %s device %s: %s",
                dispatch.notification.id,
                dispatch.device.platform.value,
                dispatch.device.id,
                self.reason,
            )
        return [Failed(self.reason) for _ in dispatches]

    async def aclose(self) -> None:
        """Nothing to close."""
