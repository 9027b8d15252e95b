"""Each delivery's own receipt in a payload encoded once per notification.

A fan-out batch is one notification to many devices, and each device's
payload differs only by its receipt token. The payload is encoded once with
a placeholder of the token's length (so a size limit is met for every
token of that length), and each delivery's body is that encoding with the
placeholder swapped for its token: bytes joined, not JSON encoded again.
The placeholder holds this process's random characters, so no text a sender
chose can stand in for it.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Generic, TypeVar

from pushcore.domain.outcomes import Dispatch
from pushcore.gateways.after_sending import body_key

T = TypeVar("T")
_NOISE = secrets.token_urlsafe(192)


def placeholder(length: int) -> str | None:
    """A stand-in of ``length`` characters for a receipt token, or None if too long."""
    if not 4 <= length <= len(_NOISE) + 4:
        return None
    return "rct_" + _NOISE[: length - 4]


def stamp(body: bytes, stand_in: str, receipt: str) -> bytes:
    """``body`` with the (last) ``stand_in`` replaced by ``receipt``."""
    head, found, tail = body.rpartition(stand_in.encode("ascii"))
    return head + receipt.encode("ascii") + tail if found else body


class Stamped(Generic[T]):
    """Bodies of one batch: encoded once per notification and token length, stamped
    with each dispatch's receipt. ``encode`` answers bytes, or a T that is no body
    (why it cannot be sent), which is passed on as it is."""

    def __init__(self, encode: Callable[[Dispatch, str | None], bytes | T]) -> None:
        self._encode = encode
        self._bodies: dict[tuple[tuple[str, str], bool, int], bytes | T] = {}

    def __call__(self, dispatch: Dispatch) -> bytes | T:
        """The body of ``dispatch``, carrying its own receipt."""
        receipt = dispatch.receipt
        stand_in = None if receipt is None else placeholder(len(receipt))
        if receipt is not None and stand_in is None:
            return self._encode(dispatch, receipt)  # no placeholder that long
        # A withdrawal's body has no receipt: the stamp then finds nothing to replace.
        # A quiet dispatch (quiet hours, silent mode) has a body of its own.
        key = (body_key(dispatch), dispatch.quiet, 0 if stand_in is None else len(stand_in))
        if key not in self._bodies:
            self._bodies[key] = self._encode(dispatch, stand_in)
        body = self._bodies[key]
        if receipt is None or stand_in is None or not isinstance(body, bytes):
            return body
        return stamp(body, stand_in, receipt)
