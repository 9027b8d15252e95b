"""The HTTP/2 client's connection handling, at the edges the APNs tests do not reach."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.settings
import pytest

from pushcore.gateways.http2 import LOCAL_SETTINGS, Connection
from pushcore.gateways.http2.h2conn import ClientH2Connection
from tests.fakes.apns_server import FakeApns
from tests.gateways.test_apns import KEY, KEY_ID, TEAM_ID, TOPIC


@pytest.fixture
def apns() -> Iterator[FakeApns]:
    fake = FakeApns(key_pem=KEY, key_id=KEY_ID, team_id=TEAM_ID, topic=TOPIC)
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()


def test_an_answer_crossing_our_reset_of_a_stream_is_ignored() -> None:
    # A request times out: we reset its stream and forget it. The server's
    # answer was already on its way. It must be dropped, not taken for a stream
    # the server opened (which, with a limit of 0 such streams, killed the
    # connection and every request on it).
    client = ClientH2Connection(
        config=h2.config.H2Configuration(client_side=True, header_encoding=None)
    )
    client.local_settings = h2.settings.Settings(True, initial_values=LOCAL_SETTINGS)
    server = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False))
    client.initiate_connection()
    server.initiate_connection()
    server.receive_data(client.data_to_send())
    client.receive_data(server.data_to_send())
    server.receive_data(client.data_to_send())

    request = [(b":method", b"POST"), (b":scheme", b"https"), (b":authority", b"x"),
               (b":path", b"/3/device/ab")]  # fmt: skip
    late = client.get_next_available_stream_id()
    client.send_headers(late, request, end_stream=True)
    alive = client.get_next_available_stream_id()
    client.send_headers(alive, request, end_stream=True)
    server.receive_data(client.data_to_send())
    client.reset_stream(late, h2.errors.ErrorCodes.CANCEL)
    client.forget(late)
    # Both answers leave the server before our reset reaches it.
    server.send_headers(late, [(":status", "200")], end_stream=True)
    server.send_headers(alive, [(":status", "200")], end_stream=True)

    events = client.receive_data(server.data_to_send())

    answered = [e.stream_id for e in events if isinstance(e, h2.events.ResponseReceived)]
    assert answered == [alive]
    assert client.state_machine.state is not h2.connection.ConnectionState.CLOSED


def test_a_connection_retired_while_connecting_closes_its_socket(apns: FakeApns) -> None:
    tls = apns.client_context()
    tls.set_alpn_protocols(["h2"])

    async def scenario() -> None:
        connection = Connection("127.0.0.1", apns.port, tls, connect_timeout=5.0)
        await asyncio.sleep(0)
        connection.retire()
        assert connection.closed
        start = connection._start
        await asyncio.wait([start], timeout=5)  # the TLS handshake finishes meanwhile
        assert start.done()
        assert start.exception() is None
        writer = connection._writer
        assert writer is None or writer.is_closing()

    asyncio.run(scenario())
