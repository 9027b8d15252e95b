"""What pushctl listen prints, and how it stops (both of its ways of receiving)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from types import FrameType
from typing import Any

POLL_SECONDS = 0.2


def _one_line(text: str) -> str:
    # Titles and bodies come from whoever sends: no newlines or escape sequences
    # reach the terminal, and one notification stays one line.
    return " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())


def describe(payload: dict[str, Any], received: datetime) -> str:
    """A notification payload as one line for people: time, title, body, sender, stream."""
    line = f"{received.astimezone(UTC):%H:%M:%SZ}  {_one_line(str(payload.get('title', '')))}"
    body = payload.get("body")
    if body:
        line += f" — {_one_line(str(body))}"
    priority = payload.get("priority")
    if priority in ("high", "critical"):
        line += f"  [{priority}]"
    sender = payload.get("sender")
    stream = payload.get("stream")
    stream_name = stream.get("name") if isinstance(stream, dict) else None
    # A stream send is from the stream by default: say so once, not twice.
    if isinstance(sender, dict) and sender.get("name") and sender["name"] != stream_name:
        line += f"  (from {_one_line(str(sender['name']))})"
    if isinstance(stream, dict):
        code = _one_line(str(stream.get("code", "")))
        line += f"  (stream {_one_line(str(stream_name or ''))}, code {code})"
    return line


def on_stop_signals(stop: threading.Event) -> Callable[[], None]:
    """Make SIGINT and SIGTERM set ``stop``; returns what puts the old handlers back."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None  # only the main thread may set handlers, and it gets the signals

    def handler(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore


def interrupt_on_term() -> Callable[[], None]:
    """Make SIGTERM and SIGINT raise KeyboardInterrupt wherever the main thread waits;
    returns what puts the old handlers back.

    SIGINT too: left to Python's default handler, the in-process transport's
    ``asyncio.Runner`` takes Ctrl-C over and cancels its task instead, and a
    Ctrl-C at the wrong moment then left the channel's close waiting for ever
    (seen under load); one handler for both makes them the same path.
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(_signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore
