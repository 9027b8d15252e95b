"""h2 connections that skip h2's costly walks and keep answering after a GOAWAY."""

from __future__ import annotations

from typing import Any

import h2.connection
import h2.settings
from hyperframe.frame import Frame, GoAwayFrame

# Our SETTINGS: no server push. Not MAX_CONCURRENT_STREAMS 0 as well: h2 checks
# that limit for any HEADERS on a stream it no longer holds, so an answer that
# crosses our reset of a timed-out stream would be taken for a stream the
# server opened, and kill the connection with every request on it.
LOCAL_SETTINGS = {h2.settings.SettingCodes.ENABLE_PUSH: 0}


class CountedH2Connection(h2.connection.H2Connection):
    """An h2 connection whose owner keeps the count of open streams.

    h2 counts open streams by walking all of them for every stream opened:
    with a thousand in flight that walk was a quarter of a request's cost.
    The owner knows its count (it never opens or accepts more than the
    limit), sets ``open_now`` before h2 needs it, and drops each closed
    stream as it ends (:meth:`forget`), as h2's walk would have. Subclasses
    answer ``open_outbound_streams`` (a client) or ``open_inbound_streams``
    (a server) from ``open_now``.
    """

    open_now = 0

    def forget(self, stream_id: int) -> None:
        """Drop a closed stream's state, remembering how it closed (as h2 does)."""
        stream = self.streams.get(stream_id)
        if stream is not None and stream.closed:
            del self.streams[stream_id]
            self._closed_streams[stream_id] = stream.closed_by


class ClientH2Connection(CountedH2Connection):
    # h2 moves the whole connection to CLOSED when a GOAWAY arrives
    # (python-hyper/h2#1181), so answers to streams at or below last_stream_id
    # would raise ProtocolError; RFC 9113 §6.8 says they may still complete.
    # Keep the state, and let Connection refuse to open new streams instead.
    def _receive_goaway_frame(self, frame: GoAwayFrame) -> tuple[list[Frame], list[Any]]:
        state = self.state_machine.state
        frames, events = super()._receive_goaway_frame(frame)
        if state is not h2.connection.ConnectionState.CLOSED:
            self.state_machine.state = state
        return frames, events

    @property
    def open_outbound_streams(self) -> int:
        """Streams opened by us and not yet finished (kept by Connection)."""
        return self.open_now

    @property
    def open_inbound_streams(self) -> int:
        """None: push is off, so the server opens no streams (and h2 need not walk ours)."""
        return 0
