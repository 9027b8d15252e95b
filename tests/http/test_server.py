"""The uvicorn options of `pushctl serve` come from Settings; the connection bound's arithmetic
and order (end to end in tests/faults/test_connections.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest
import uvicorn

from pushcore import load_settings
from pushcore.domain.errors import ConfigError
from pushcore_http.connections import Connections, channel_bound, connection_bound
from pushcore_http.server import MAX_HEAD_BYTES, server_options


def test_the_access_log_is_off_by_default_and_on_when_asked() -> None:
    assert server_options(load_settings(env={}), host="h", port=1)["access_log"] is False
    on = load_settings(env={"PUSHCORE_ACCESS_LOG": "true"})
    assert server_options(on, host="h", port=1)["access_log"] is True


def test_the_options_make_a_config_with_the_head_limit() -> None:
    options = server_options(load_settings(env={}), host="127.0.0.1", port=8081)
    config = uvicorn.Config(lambda *_: None, **options)
    assert (config.host, config.port, config.lifespan) == ("127.0.0.1", 8081, "on")
    # httptools is installed (uvicorn[standard]): it is kept, with the limits added.
    assert options["http"].__name__ == "GuardedHttpTools"
    assert config.h11_max_incomplete_event_size == MAX_HEAD_BYTES == 16 * 1024


def test_the_timeouts_and_the_bound_come_from_the_environment() -> None:
    settings = load_settings(
        env={
            "PUSHCORE_HTTP_HEAD_TIMEOUT": "2s",
            "PUSHCORE_HTTP_BODY_TIMEOUT": "500ms",
            "PUSHCORE_HTTP_MAX_CONNECTIONS": "100",
        }
    )
    assert settings.http_head_timeout == timedelta(seconds=2)
    assert settings.http_body_timeout == timedelta(milliseconds=500)
    assert settings.http_max_connections == 100
    defaults = load_settings(env={})
    assert (defaults.http_head_timeout, defaults.http_body_timeout) == (
        timedelta(seconds=10),
        timedelta(seconds=30),
    )
    assert defaults.http_max_connections == 0


@pytest.mark.parametrize(
    ("env", "name"),
    [
        ({"PUSHCORE_HTTP_HEAD_TIMEOUT": "0"}, "PUSHCORE_HTTP_HEAD_TIMEOUT"),
        ({"PUSHCORE_HTTP_BODY_TIMEOUT": "2h"}, "PUSHCORE_HTTP_BODY_TIMEOUT"),
        ({"PUSHCORE_HTTP_MAX_CONNECTIONS": "1"}, "PUSHCORE_HTTP_MAX_CONNECTIONS"),
        ({"PUSHCORE_HTTP_WRITE_TIMEOUT": "0"}, "PUSHCORE_HTTP_WRITE_TIMEOUT"),
        ({"PUSHCORE_LIVE_MAX_CHANNELS": "-1"}, "PUSHCORE_LIVE_MAX_CHANNELS"),
    ],
)
def test_invalid_timeouts_and_bounds_name_the_setting(env: dict[str, str], name: str) -> None:
    with pytest.raises(ConfigError, match=name):
        load_settings(env=env)


@pytest.mark.parametrize(
    ("open_files", "configured", "bound"),
    [
        (1024, 0, 640),  # 384 descriptors kept for the database, gateways and files
        (65536, 0, 49152),  # a quarter kept
        (512, 0, 128),
        (256, 0, 64),  # too few to keep 384: a quarter for connections
        (1024, 100, 100),  # a configured bound below the derived one
        (1024, 5000, 640),  # above it: what the descriptors allow
    ],
)
def test_the_bound_stays_below_the_open_files_limit(
    open_files: int, configured: int, bound: int
) -> None:
    assert connection_bound(open_files, configured) == bound


@pytest.mark.parametrize(
    ("connections", "configured", "channels"),
    [
        (640, 0, 480),  # a quarter of the connections kept for every other request
        (49152, 0, 36864),
        (640, 100, 100),
        (640, 5000, 480),  # above three quarters: lowered
        (1, 0, 1),
    ],
)
def test_live_channels_keep_a_quarter_of_the_connections_for_the_rest(
    connections: int, configured: int, channels: int
) -> None:
    assert channel_bound(connections, configured) == channels
    settings = load_settings(env={"PUSHCORE_LIVE_MAX_CHANNELS": str(configured)})
    assert settings.live_max_channels == configured


class FakeConnection:
    """A connection that records being closed for the bound."""

    def __init__(self, name: str, closed: list[str]) -> None:
        self.name = name
        self._closed = closed

    def close_for_bound(self) -> None:
        self._closed.append(self.name)


def test_at_the_bound_a_held_refusal_goes_first_then_the_longest_waiting() -> None:
    closed: list[str] = []
    connections = Connections(bound=3)
    idle, busy, held = (FakeConnection(n, closed) for n in ("idle", "busy", "held"))
    for conn in (idle, busy, held):
        assert connections.admit(conn)
    connections.busy(busy)
    connections.busy(held)
    connections.hold(held)

    assert connections.admit(FakeConnection("new", closed))
    assert closed == ["held"]
    assert connections.admit(FakeConnection("newer", closed))
    assert closed == ["held", "idle"]
    assert len(connections) == 3


def test_progress_moves_a_connection_behind_those_still_waiting() -> None:
    closed: list[str] = []
    connections = Connections(bound=2)
    first, second = FakeConnection("first", closed), FakeConnection("second", closed)
    connections.admit(first)
    connections.admit(second)
    connections.waiting(first)  # first made progress since

    assert connections.admit(FakeConnection("new", closed))
    assert closed == ["second"]


def test_with_every_connection_busy_the_newcomer_is_refused() -> None:
    closed: list[str] = []
    connections = Connections(bound=1)
    busy = FakeConnection("busy", closed)
    connections.admit(busy)
    connections.busy(busy)

    assert not connections.admit(FakeConnection("new", closed))
    assert closed == []
    assert len(connections) == 1
