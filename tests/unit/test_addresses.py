"""Forbidden network addresses (domain.addresses) and the SSRF guard on IP-literal URLs (net)."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pushcore.domain.addresses import is_forbidden_address
from pushcore.outbound.guard import NetworkGuard

FORBIDDEN = [
    # IPv4
    "127.0.0.1",  # loopback
    "127.255.255.254",
    "10.0.0.1",  # private
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "169.254.169.254",  # link-local (cloud metadata)
    "224.0.0.1",  # multicast
    "239.255.255.250",
    "0.0.0.0",  # unspecified
    "255.255.255.255",  # broadcast
    "100.64.0.1",  # carrier-grade NAT
    "192.0.2.1",  # documentation
    "198.18.0.1",  # benchmarking
    "240.0.0.1",  # reserved
    # IPv6
    "::1",  # loopback
    "::",  # unspecified
    "fe80::1",  # link-local
    "fc00::1",  # unique local
    "fd12:3456:789a::1",
    "ff02::1",  # multicast
    "ff0e::1",
    "2001:db8::1",  # documentation
    # IPv4 inside IPv6
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "::ffff:169.254.169.254",
    "::ffff:192.168.0.1",
    "2002:0a00:0001::",  # 6to4 of 10.0.0.1
    "2002:7f00:0001::1",  # 6to4 of 127.0.0.1
    "2002:a9fe:a9fe::",  # 6to4 of 169.254.169.254
    "2002:c0a8:0101::",  # 6to4 of 192.168.1.1
    "::127.0.0.1",  # deprecated IPv4-compatible
]

ALLOWED = [
    "8.8.8.8",
    "1.1.1.1",
    "93.184.216.34",
    "2606:4700:4700::1111",
    "2001:4860:4860::8888",
    "::ffff:8.8.8.8",
    "2002:0808:0808::",  # 6to4 of 8.8.8.8
]

PRIVATE_V4_NETWORKS = [
    "10.0.0.0/8",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "224.0.0.0/4",
    "100.64.0.0/10",
    "0.0.0.0/8",
]

ipv4s = st.integers(0, 2**32 - 1).map(ipaddress.IPv4Address)


@pytest.mark.parametrize("address", FORBIDDEN)
def test_forbidden_addresses(address: str) -> None:
    assert is_forbidden_address(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", ALLOWED)
def test_public_addresses_are_allowed(address: str) -> None:
    assert not is_forbidden_address(ipaddress.ip_address(address))


@given(st.sampled_from(PRIVATE_V4_NETWORKS), st.data())
def test_every_address_of_the_special_ranges_is_forbidden(
    network: str, data: st.DataObject
) -> None:
    net = ipaddress.IPv4Network(network)
    offset = data.draw(st.integers(0, net.num_addresses - 1))
    assert is_forbidden_address(net.network_address + offset)


@given(ipv4s)
def test_ipv4_mapped_ipv6_is_judged_by_its_ipv4(address: ipaddress.IPv4Address) -> None:
    mapped = ipaddress.IPv6Address(f"::ffff:{address}")
    assert is_forbidden_address(mapped) == is_forbidden_address(address)


@given(ipv4s, st.integers(0, 2**80 - 1))
def test_6to4_is_judged_by_its_ipv4(address: ipaddress.IPv4Address, rest: int) -> None:
    sixtofour = ipaddress.IPv6Address((0x2002 << 112) | (int(address) << 80) | rest)
    assert sixtofour.sixtofour == address
    assert is_forbidden_address(sixtofour) == is_forbidden_address(address)


@given(ipv4s)
def test_teredo_is_judged_by_its_client_ipv4(client: ipaddress.IPv4Address) -> None:
    # 2001:0000:<server>:<flags>:<port ^ ffff>:<client ^ ffffffff>, server 65.54.227.120.
    server = int(ipaddress.IPv4Address("65.54.227.120"))
    value = (0x20010000 << 96) | (server << 64) | (0xFFFF << 32) | (int(client) ^ 0xFFFFFFFF)
    teredo = ipaddress.IPv6Address(value)
    assert teredo.teredo is not None
    assert teredo.teredo[1] == client
    assert is_forbidden_address(teredo) == is_forbidden_address(client)


# -- NetworkGuard on IP literals (no DNS) ---------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/x",
        "http://[::1]/",
        "http://169.254.169.254/",
        "http://169.254.169.254/latest/meta-data/",
        "https://10.0.0.1:8443/hook",
        "http://[::ffff:127.0.0.1]/",
        "http://[fe80::1]:8080/",
        "http://0.0.0.0/",
    ],
)
def test_guard_refuses_private_ip_literals(url: str) -> None:
    guard = NetworkGuard()
    with pytest.raises(ValueError, match="private, loopback or link-local"):
        guard.check(url)
    with pytest.raises(ValueError, match="private, loopback or link-local"):
        guard.resolve(url)


@pytest.mark.parametrize(
    ("url", "address"),
    [
        ("http://127.0.0.1/x", "127.0.0.1"),
        ("http://[::1]/", "::1"),
        ("http://169.254.169.254/", "169.254.169.254"),
    ],
)
def test_guard_allows_private_addresses_when_configured(url: str, address: str) -> None:
    guard = NetworkGuard(allow_private=True)
    guard.check(url)
    assert guard.resolve(url) == [ipaddress.ip_address(address)]


@pytest.mark.parametrize(
    "url",
    ["ftp://x", "ftp://8.8.8.8/", "file:///etc/passwd", "http://", "https:///path", "8.8.8.8"],
)
@pytest.mark.parametrize("allow_private", [False, True])
def test_guard_refuses_non_http_urls(url: str, allow_private: bool) -> None:
    with pytest.raises(ValueError, match="http or https URL"):
        NetworkGuard(allow_private=allow_private).check(url)


@pytest.mark.parametrize(
    ("url", "address"),
    [
        ("http://8.8.8.8/", "8.8.8.8"),
        ("https://93.184.216.34:8443/x?y=1", "93.184.216.34"),
        ("https://[2606:4700:4700::1111]/", "2606:4700:4700::1111"),
    ],
)
def test_guard_allows_public_ip_literals(url: str, address: str) -> None:
    guard = NetworkGuard()
    guard.check(url)
    assert guard.resolve(url) == [ipaddress.ip_address(address)]
