"""Which network addresses the service must not connect to on a user's behalf."""

from __future__ import annotations

import ipaddress

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def is_forbidden_address(address: IPAddress) -> bool:
    """True for loopback, private, link-local, multicast, reserved and unspecified addresses.

    IPv4-mapped and 6to4/Teredo-embedded IPv6 addresses are judged by the IPv4
    address inside them, so ``::ffff:127.0.0.1`` is loopback too.
    """
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address.teredo is not None:
            embedded = address.teredo[1]
        if embedded is not None:
            return is_forbidden_address(embedded)
    if isinstance(address, ipaddress.IPv6Address) and address.is_site_local:
        return True  # deprecated fec0::/10, which ipaddress counts as global
    return (
        address.is_loopback
        or address.is_private
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or not address.is_global
    )
