"""What can go wrong with an HTTP/2 request, by what it means for sending it again."""

from __future__ import annotations


class H2Error(Exception):
    """A request could not be completed over HTTP/2."""


class Unreachable(H2Error):
    """No HTTP/2 connection to the server could be made; nothing was sent."""


class ConnectionLost(H2Error):
    """The connection or stream failed while the request was in flight: it may have arrived."""


class NotProcessed(H2Error):
    """The server did not process the request (GOAWAY, REFUSED_STREAM): safe to send again."""
