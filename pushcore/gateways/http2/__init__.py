"""A small HTTP/2 client on the ``h2`` library and asyncio streams, made for APNs.

Written by hand because httpx's HTTP/2 reached only about 470 pushes a second
on this project's machine. Here the requests submitted in one event-loop turn
go out together: a writer task per connection opens as many streams as the
server's SETTINGS_MAX_CONCURRENT_STREAMS allows (following its changes),
pushes bodies as far as the flow-control windows allow, and writes them in
one go; a reader task turns frames into responses.

After a GOAWAY a connection opens no new streams; requests the server did not
process (above GOAWAY's last_stream_id, REFUSED_STREAM, or never sent) go out
again on another connection. A request whose connection dies in flight has
an unknown fate: :class:`ConnectionLost`.
"""

from pushcore.gateways.http2.connection import Connection, Header, Response
from pushcore.gateways.http2.encoder import HeaderEncoder
from pushcore.gateways.http2.errors import ConnectionLost, H2Error, NotProcessed, Unreachable
from pushcore.gateways.http2.h2conn import LOCAL_SETTINGS, CountedH2Connection
from pushcore.gateways.http2.pool import H2Pool

__all__ = [
    "LOCAL_SETTINGS",
    "Connection",
    "ConnectionLost",
    "CountedH2Connection",
    "H2Error",
    "H2Pool",
    "Header",
    "HeaderEncoder",
    "NotProcessed",
    "Response",
    "Unreachable",
]
