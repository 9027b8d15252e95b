"""The h2 and hpack internals the APNs client relies on are still there.

``gateways/http2/h2conn.py`` and ``encoder.py`` override private parts of h2
and hpack for speed and for RFC 9113's GOAWAY rule (see their docstrings);
pyproject.toml pins the range they were tested with. When an upgrade moves
one of these, this test names it, instead of the APNs client failing in
some less obvious way.
"""

from __future__ import annotations

import inspect

import h2.config
import h2.connection
import h2.stream
import hpack
import hpack.hpack
import hpack.table
import pytest

from pushcore.gateways.http2.h2conn import ClientH2Connection

MOVED = "h2/hpack changed a private part pushcore's HTTP/2 client overrides: {}; see {}"


def fresh() -> ClientH2Connection:
    return ClientH2Connection(config=h2.config.H2Configuration(client_side=True))


@pytest.mark.parametrize(
    "name",
    ["_closed_streams", "streams", "state_machine", "encoder"],
)
def test_the_connection_attributes_we_touch_exist(name: str) -> None:
    assert hasattr(fresh(), name), MOVED.format(f"H2Connection.{name}", "h2conn.py")


def test_the_closed_streams_map_and_closing_reason_are_as_we_use_them() -> None:
    connection = fresh()
    assert isinstance(connection._closed_streams, dict), MOVED.format(
        "H2Connection._closed_streams is no longer a dict", "h2conn.py"
    )
    assert hasattr(h2.stream.H2Stream, "closed_by"), MOVED.format("H2Stream.closed_by", "h2conn.py")


def test_the_goaway_handler_we_override_keeps_its_signature() -> None:
    handler = getattr(h2.connection.H2Connection, "_receive_goaway_frame", None)
    assert handler is not None, MOVED.format("H2Connection._receive_goaway_frame", "h2conn.py")
    assert list(inspect.signature(handler).parameters) == ["self", "frame"], MOVED.format(
        "the signature of H2Connection._receive_goaway_frame", "h2conn.py"
    )
    assert hasattr(h2.connection.ConnectionState, "CLOSED")
    assert hasattr(fresh().state_machine, "state"), MOVED.format(
        "H2ConnectionStateMachine.state", "h2conn.py"
    )


@pytest.mark.parametrize("name", ["open_outbound_streams", "open_inbound_streams"])
def test_the_stream_counts_we_answer_ourselves_are_still_properties(name: str) -> None:
    assert isinstance(getattr(h2.connection.H2Connection, name, None), property), MOVED.format(
        f"H2Connection.{name}", "h2conn.py"
    )


def test_the_hpack_parts_the_encoder_uses_exist() -> None:
    assert callable(getattr(hpack.hpack, "encode_integer", None)), MOVED.format(
        "hpack.hpack.encode_integer", "encoder.py"
    )
    assert isinstance(getattr(hpack.table.HeaderTable, "STATIC_TABLE_MAPPING", None), dict), (
        MOVED.format("HeaderTable.STATIC_TABLE_MAPPING", "encoder.py")
    )
    encoder = hpack.Encoder()
    assert hasattr(encoder.header_table, "resized"), MOVED.format(
        "HeaderTable.resized", "encoder.py"
    )
    for name in ("add", "_encode_table_size_change"):
        assert callable(getattr(encoder, name, None)), MOVED.format(f"Encoder.{name}", "encoder.py")
    # add(to_add, sensitive, huffman) answers the field's bytes; indexed ones have the top bit.
    assert encoder.add((b":method", b"POST"), False, False)[0] & 0x80
