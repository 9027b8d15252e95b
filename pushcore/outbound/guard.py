"""The SSRF guard: user-given URLs may only reach public addresses (unless allowed).

The host is resolved here and every address it resolves to is checked;
callers that then connect should connect to one of the returned addresses,
so that a DNS answer that changes between check and use (DNS rebinding)
cannot slip a private address through.
"""

from __future__ import annotations

import functools
import ipaddress
import socket
import ssl
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import attrs

from pushcore.domain.addresses import IPAddress, is_forbidden_address


class NetworkGuard:
    """Checks URLs against the private, loopback and link-local ranges."""

    def __init__(self, allow_private: bool = False) -> None:
        self.allow_private = allow_private

    def resolve(self, url: str) -> list[IPAddress]:
        """The allowed addresses of the URL's host; ValueError when none may be used."""
        parts = urlsplit(url)
        host = parts.hostname
        if parts.scheme not in ("http", "https") or not host:
            raise ValueError("must be an http or https URL")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            addresses: list[IPAddress] = [ipaddress.ip_address(host)]
        except ValueError:
            try:
                infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            except (socket.gaierror, UnicodeError):
                raise ValueError(f"host {host!r} cannot be resolved") from None
            addresses = [ipaddress.ip_address(info[4][0]) for info in infos]
        if not self.allow_private:
            for address in addresses:
                if is_forbidden_address(address):
                    raise ValueError("must not point at a private, loopback or link-local address")
        return addresses

    def check(self, url: str) -> None:
        """ValueError unless the URL may be fetched or posted to."""
        self.resolve(url)


@attrs.frozen
class Pinned:
    """A request pinned to a checked address: what was checked is what gets connected to.

    ``url`` has the address in place of the host name; ``host_header`` and
    ``server_name`` (TLS SNI and certificate name; None for plain http) keep
    the original name, so virtual hosts and certificate checks still work.
    """

    url: str
    host_header: str
    server_name: str | None


# Cached: a pure function of its arguments (Pinned is frozen), and its two URL
# parses cost a few microseconds on every webhook post, to the same few URLs.
@functools.lru_cache(maxsize=4096)
def pin(url: str, address: IPAddress) -> Pinned:
    """``url`` rewritten to connect to ``address``."""
    parts = urlsplit(url)
    literal = f"[{address}]" if address.version == 6 else str(address)
    netloc = literal + (f":{parts.port}" if parts.port else "")
    rewritten = urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))
    server_name = parts.hostname if parts.scheme == "https" else None
    return Pinned(rewritten, parts.netloc.rpartition("@")[2], server_name)


def tls_context(ca_file: Path | None) -> ssl.SSLContext:
    """The system's trusted roots, plus PUSHCORE_CA_FILE when set."""
    context = ssl.create_default_context()
    if ca_file is not None:
        context.load_verify_locations(cafile=str(ca_file))
    return context
