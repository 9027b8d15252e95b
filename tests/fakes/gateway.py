"""A gateway that answers from a script per device token and records what it is given.

It satisfies :class:`pushcore.ports.Gateway`, so the delivery engine can be
driven without any network: each dispatch is recorded with the (fake)
clock's time, and each token's answers come from a queue of outcomes
(``Delivered()`` once the queue is empty). A token may also be set to make
``send`` raise, as a buggy gateway would, and sends may be held until the
test lets them go.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict, deque
from collections.abc import Iterable, Sequence
from datetime import datetime

import attrs

from pushcore.domain.outcomes import Delivered, Dispatch, Outcome, Retry
from pushcore.ports import Clock


@attrs.frozen
class Sent:
    """One dispatch as the gateway received it."""

    delivery_id: str
    notification_id: str
    device_id: str
    token: str
    attempt: int  # the delivery's attempts count at the time it was handed over
    at: datetime  # the clock's time when the gateway got it
    outcome: Outcome | None  # what the gateway answered; None when it raised or was held
    title: str = ""  # what the device shows: an edit's race is checked on it
    revision: int = 1
    kind: str = "notification"  # or "withdrawal"


class ScriptedGateway:
    """Scripted outcomes per token; every dispatch recorded, in order of arrival."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._script: dict[str, deque[Outcome]] = defaultdict(deque)
        self._raises: dict[str, Exception] = {}
        self._gate: asyncio.Event | None = None
        self._waiting = 0
        self._down_until: datetime | None = None
        self.sent: list[Sent] = []
        self.calls: list[list[str]] = []  # one entry per send() call: the tokens it got
        self.closed = False

    # -- scripting -----------------------------------------------------------

    def script(self, token: str, *outcomes: Outcome) -> None:
        """Queue ``outcomes`` as the next answers for ``token`` (then Delivered())."""
        self._script[token].extend(outcomes)

    def raise_for(self, token: str, error: Exception | None = None) -> None:
        """Make ``send`` raise ``error`` whenever a batch holds ``token``."""
        self._raises[token] = error or RuntimeError(f"gateway bug for {token}")

    def stop_raising(self, token: str) -> None:
        """Let ``token`` be answered from its script again."""
        self._raises.pop(token, None)

    def down_until(self, instant: datetime) -> None:
        """Answer every send with a 503 (a Retry) until the clock reaches ``instant``."""
        self._down_until = instant

    def hold(self) -> None:
        """Make every ``send`` wait until :meth:`let_go` (or forever)."""
        self._gate = asyncio.Event()

    def let_go(self) -> None:
        """Let held and future sends answer."""
        if self._gate is not None:
            self._gate.set()

    @property
    def waiting(self) -> int:
        """How many sends are held right now."""
        return self._waiting

    # -- what was sent -------------------------------------------------------

    def tokens(self) -> list[str]:
        """The device token of each dispatch received, in order."""
        return [s.token for s in self.sent]

    def for_token(self, token: str) -> list[Sent]:
        """The dispatches received for ``token``."""
        return [s for s in self.sent if s.token == token]

    def for_notification(self, notification_id: str) -> list[Sent]:
        """The dispatches received for one notification."""
        return [s for s in self.sent if s.notification_id == notification_id]

    def duplicates(self) -> dict[str, int]:
        """Delivery id -> how many times it was handed over, for those handed over twice or more."""
        counts: dict[str, int] = defaultdict(int)
        for s in self.sent:
            counts[s.delivery_id] += 1
        return {k: v for k, v in counts.items() if v > 1}

    # -- the Gateway protocol ------------------------------------------------

    async def send(self, dispatches: Sequence[Dispatch]) -> Sequence[Outcome]:
        """Record each dispatch, then answer from the script (or raise, or wait)."""
        at = self._clock.now()
        batch_start = len(self.sent)
        for d in dispatches:
            self.sent.append(_sent(d, at, None))
        self.calls.append([d.device.token for d in dispatches])
        if self._gate is not None and not self._gate.is_set():
            self._waiting += 1
            try:
                await self._gate.wait()
            finally:
                self._waiting -= 1
        for d in dispatches:
            error = self._raises.get(d.device.token)
            if error is not None:
                raise error
        if self._down_until is not None and at < self._down_until:
            outcomes: list[Outcome] = [Retry("Service Unavailable") for _ in dispatches]
        else:
            outcomes = [self._next(d.device.token) for d in dispatches]
        for i, outcome in enumerate(outcomes):
            self.sent[batch_start + i] = attrs.evolve(self.sent[batch_start + i], outcome=outcome)
        return outcomes

    async def aclose(self) -> None:
        """Remember that the engine closed the gateway."""
        self.closed = True

    def _next(self, token: str) -> Outcome:
        queue = self._script.get(token)
        return queue.popleft() if queue else Delivered()


def _sent(d: Dispatch, at: datetime, outcome: Outcome | None) -> Sent:
    return Sent(
        delivery_id=d.delivery.id,
        notification_id=d.notification.id,
        device_id=d.device.id,
        token=d.device.token,
        attempt=d.delivery.attempts,
        at=at,
        outcome=outcome,
        title=d.notification.title,
        revision=d.notification.revision,
        kind=d.delivery.kind,
    )


def sent_tokens(sent: Iterable[Sent]) -> list[str]:
    """The tokens of ``sent``, sorted (for order-insensitive comparisons)."""
    return sorted(s.token for s in sent)
