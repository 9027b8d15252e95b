"""End to end: open live channels against a real `pushctl serve` (API.md, "People-side limits").

A stop with channels open ends them at once and exits within 5 s; channels
never take the connection slots that /healthz, sign-in and the API need; a
channel whose client reads nothing is closed.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests.e2e.server import Server
from tests.live.sse import Listener

pytestmark = pytest.mark.slow


def listen(server: Server, headers: dict[str, str]) -> Listener:
    listener = Listener(f"{server.base}/api/inbox/events", headers)
    assert listener.opened.wait(10)
    assert listener.status == 200
    return listener


def test_sigterm_with_a_channel_open_ends_it_at_once_and_exits_within_5_s(tmp_path: Path) -> None:
    server = Server(tmp_path / "data")
    server.start()
    try:
        listener = listen(server, server.user("alice"))
        assert server.process is not None
        started = time.monotonic()
        server.process.terminate()
        code = server.process.wait(15)
        took = time.monotonic() - started
        assert listener.ended.wait(1)
    finally:
        server.stop()
    # uvicorn re-raises the signal once it has stopped cleanly.
    assert code in (0, -signal.SIGTERM), server.log.read_text()
    assert took < 5, f"took {took:.1f} s to exit"
