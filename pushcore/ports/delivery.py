"""The delivery engine's outside world: gateways, an observer, a waker."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from pushcore.domain.outcomes import Dispatch, Outcome
    from pushcore.domain.retry import RetryPolicy

# Awaited before a request starts: returns once the engine may send (delivery/pace.py).
Ready = Callable[[], Awaitable[None]]


class Gateway(Protocol):
    """A push gateway (APNs, FCM, Web Push, webhook): sends and reports per delivery."""

    async def send(self, dispatches: Sequence[Dispatch]) -> Sequence[Outcome]:
        """One outcome per dispatch, in order. Never raises for a delivery's failure:
        a failure is an outcome (Retry, TokenInvalid, Failed)."""
        ...

    async def aclose(self) -> None:
        """Close connections."""
        ...


@runtime_checkable
class EachGateway(Gateway, Protocol):
    """A gateway whose deliveries are answered one by one (a webhook is a request of
    its own to a host of its own): the engine records each as it is answered."""

    def send_each(
        self, dispatches: Sequence[Dispatch], ready: Ready | None = None
    ) -> Sequence[asyncio.Future[Outcome]]:
        """Start sending every dispatch; one future outcome per dispatch, in order.
        Neither this nor the futures raise for a delivery's failure; cancelling a
        future gives its send up. ``ready``, when given, is awaited before each
        request starts (the engine's records keeping up: delivery/pace.py)."""
        ...


class DeliveryObserver(Protocol):
    """Hears what the delivery engine recorded (metrics); the engine works without one."""

    def recorded(self, outcomes: Sequence[tuple[Dispatch, Outcome]], retry: RetryPolicy) -> None:
        """Called once per batch, after its outcomes were committed, on the engine's loop.

        ``retry`` is the policy they were recorded under: a Retry of a delivery on
        its last allowed attempt was recorded as a failure. Must be quick and must
        not raise: it runs between a batch and the next.
        """
        ...


class Waker(Protocol):
    """Tells the delivery engine that work may be due earlier than it planned."""

    def wake(self, at: datetime) -> None:
        """Work is due at ``at``. Safe to call from any thread."""
        ...
