"""The icon probe against a real loopback server: magic bytes, caps, redirects, SSRF, cache."""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx
import pytest

from pushcore.domain.addresses import IPAddress
from pushcore.outbound.guard import NetworkGuard
from pushcore.outbound.icons import HttpIconProbe
from tests.fakes.icon_server import (
    HTML_PAGE,
    PNG_SIGNATURE,
    TINY_GIF,
    TINY_JPEG,
    IconServer,
    Route,
    running_icon_server,
    tiny_png,
)
from tests.gateways.support import Tls, closed_port, localhost_address, make_ca

CAP = 1024
PRIVATE_REFUSAL = "must not point at a private, loopback or link-local address"
NOT_AN_IMAGE = "must be a PNG or JPEG image"
TOO_BIG = "must be at most "

ProbeFactory = Callable[..., HttpIconProbe]


class AliasGuard(NetworkGuard):
    """The real guard (private addresses refused), plus names that count as public.

    Stands in for a DNS name of a public server, so the first hop of a
    redirect can be served from loopback while every other hop is judged by
    the real rules.
    """

    def __init__(self, aliases: dict[str, IPAddress]) -> None:
        super().__init__(allow_private=False)
        self.aliases = aliases

    def resolve(self, url: str) -> list[IPAddress]:
        host = httpx.URL(url).host
        if host in self.aliases:
            return [self.aliases[host]]
        return super().resolve(url)


@pytest.fixture
def server() -> Iterator[IconServer]:
    """An icon server on loopback."""
    with running_icon_server() as running:
        yield running


@pytest.fixture
def other_server() -> Iterator[IconServer]:
    """A second icon server (a redirect target)."""
    with running_icon_server() as running:
        yield running


@pytest.fixture
def requests_made() -> list[httpx.Request]:
    """Every request any probe client of the test sent."""
    return []


@pytest.fixture
def make_probe(requests_made: list[httpx.Request]) -> Iterator[ProbeFactory]:
    """Probes with real clients (closed after the test); private addresses allowed by default."""
    clients: list[httpx.AsyncClient] = []

    async def note(request: httpx.Request) -> None:
        requests_made.append(request)

    def make(
        guard: NetworkGuard | None = None,
        timeout: float = 2.0,
        max_bytes: int = CAP,
        verify: ssl.SSLContext | bool = True,
        deadline: float = 5.0,
    ) -> HttpIconProbe:
        def new_client() -> httpx.AsyncClient:
            client = httpx.AsyncClient(
                timeout=httpx.Timeout(timeout),
                verify=verify,
                trust_env=False,
                event_hooks={"request": [note]},
            )
            clients.append(client)
            return client

        return HttpIconProbe(
            guard or NetworkGuard(allow_private=True), new_client, max_bytes, deadline=deadline
        )

    yield make
    for client in clients:
        asyncio.run(client.aclose())


@pytest.fixture
def probe(make_probe: ProbeFactory) -> HttpIconProbe:
    """A probe with a 1 KiB cap, loopback allowed."""
    return make_probe()


def verdict(probe: HttpIconProbe, url: str) -> str | None:
    """None when the icon is accepted, else the refusal message."""
    try:
        asyncio.run(probe.check(url, "acct"))
    except ValueError as exc:
        return str(exc)
    return None


def padded_png(size: int) -> bytes:
    """A body of exactly ``size`` bytes that starts like a PNG."""
    png = tiny_png()
    assert size >= len(png)
    return png + b"\x00" * (size - len(png))


# -- what is served ---------------------------------------------------------------


def test_a_png_is_accepted(server: IconServer, probe: HttpIconProbe) -> None:
    body = tiny_png()
    assert body.startswith(PNG_SIGNATURE)
    url = server.serve("/icon.png", body, "image/png")

    assert verdict(probe, url) is None
    assert server.count("/icon.png") == 1


def test_a_jpeg_is_accepted(server: IconServer, probe: HttpIconProbe) -> None:
    url = server.serve("/icon.jpg", TINY_JPEG, "image/jpeg")

    assert verdict(probe, url) is None


def test_magic_bytes_decide_not_the_content_type(server: IconServer, probe: HttpIconProbe) -> None:
    png_as_text = server.serve("/png-as-text", tiny_png(), "text/plain")
    html_as_png = server.serve("/html-as-png", HTML_PAGE, "image/png")

    assert verdict(probe, png_as_text) is None
    assert verdict(probe, html_as_png) == NOT_AN_IMAGE


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (TINY_GIF, "image/gif"),
        (HTML_PAGE, "text/html; charset=utf-8"),
        (b"", "image/png"),
        (PNG_SIGNATURE[:7], "image/png"),  # cut short of the full signature
        (b"\xff\xd8", "image/jpeg"),
    ],
)
def test_other_content_is_refused(
    server: IconServer, probe: HttpIconProbe, body: bytes, content_type: str
) -> None:
    url = server.serve("/thing", body, content_type)

    assert verdict(probe, url) == NOT_AN_IMAGE


def test_a_png_signature_split_over_chunks_is_recognised(
    server: IconServer, probe: HttpIconProbe
) -> None:
    url = server.serve("/split.png", tiny_png(), "image/png", chunked=True, chunk_size=3)

    assert verdict(probe, url) is None


@pytest.mark.parametrize("status", [404, 403, 500, 204])
def test_error_statuses_are_refused_with_the_status(
    server: IconServer, probe: HttpIconProbe, status: int
) -> None:
    url = server.route("/icon.png", Route(status=status, body=b"" if status == 204 else tiny_png()))

    assert verdict(probe, url) == f"could not be fetched (HTTP {status})"


def test_an_unknown_path_is_a_404(server: IconServer, probe: HttpIconProbe) -> None:
    assert verdict(probe, server.url("/missing.png")) == "could not be fetched (HTTP 404)"


def test_the_request_names_the_url_host(server: IconServer, probe: HttpIconProbe) -> None:
    url = server.serve("/icon.png", tiny_png(), "image/png")

    assert verdict(probe, url) is None

    [hit] = server.hits
    assert hit.method == "GET"
    assert hit.host == f"127.0.0.1:{server.port}"


def test_a_name_is_pinned_to_its_checked_address(
    server: IconServer, make_probe: ProbeFactory, requests_made: list[httpx.Request]
) -> None:
    server.serve("/icon.png", tiny_png(), "image/png")
    probe = make_probe(AliasGuard({"icons.example": server_address(server)}))

    assert verdict(probe, f"http://icons.example:{server.port}/icon.png") is None

    [hit] = server.hits
    assert hit.host == f"icons.example:{server.port}"
    [request] = requests_made
    assert request.url.host == server.host  # connected to the checked address, no DNS


# -- size cap -------------------------------------------------------------------


@pytest.mark.parametrize("chunked", [False, True])
def test_a_body_at_the_cap_is_accepted(
    server: IconServer, probe: HttpIconProbe, chunked: bool
) -> None:
    url = server.serve("/big.png", padded_png(CAP), "image/png", chunked=chunked, chunk_size=100)

    assert verdict(probe, url) is None


def test_a_declared_length_over_the_cap_is_refused(
    server: IconServer, probe: HttpIconProbe
) -> None:
    url = server.serve("/big.png", padded_png(CAP + 1), "image/png")

    message = verdict(probe, url)

    assert message is not None
    assert message.startswith(TOO_BIG)


def test_a_chunked_body_over_the_cap_is_refused_while_streaming(
    server: IconServer, probe: HttpIconProbe
) -> None:
    # No Content-Length: the cap must be enforced on the bytes as they come.
    url = server.serve(
        "/endless.png", padded_png(64 * CAP), "image/png", chunked=True, chunk_size=256
    )

    message = verdict(probe, url)

    assert message is not None
    assert message.startswith(TOO_BIG)


def test_the_default_cap_is_5_mb(server: IconServer) -> None:
    probe = HttpIconProbe(
        NetworkGuard(allow_private=True), lambda: httpx.AsyncClient(timeout=2.0, trust_env=False)
    )
    big = server.route(
        "/huge.png",
        Route(body=tiny_png(), headers={"Content-Length": str(5 * 1024 * 1024 + 1)}, chunked=True),
    )
    assert verdict(probe, big) == "must be at most 5 MB"


def test_the_size_message_states_the_configured_cap(
    server: IconServer, probe: HttpIconProbe
) -> None:
    url = server.serve("/big.png", padded_png(CAP + 1), "image/png")

    assert verdict(probe, url) != "must be at most 0 MB"


# -- redirects ------------------------------------------------------------------


def test_a_redirect_chain_to_a_png_is_followed(server: IconServer, probe: HttpIconProbe) -> None:
    server.serve("/final.png", tiny_png(), "image/png")
    server.redirect("/r3", "/final.png", 308)
    server.redirect("/r2", "r3", 307)  # relative to the current URL
    start = server.redirect("/r1", server.url("/r2"), 301)

    assert verdict(probe, start) is None
    assert [hit.path for hit in server.hits] == ["/r1", "/r2", "/r3", "/final.png"]


def test_a_redirect_to_another_server_is_followed(
    server: IconServer, other_server: IconServer, probe: HttpIconProbe
) -> None:
    target = other_server.serve("/icon.jpg", TINY_JPEG, "image/jpeg")
    start = server.redirect("/moved", target)

    assert verdict(probe, start) is None
    assert other_server.hits[0].host == f"127.0.0.1:{other_server.port}"


def test_a_redirect_chain_to_html_is_refused(server: IconServer, probe: HttpIconProbe) -> None:
    server.serve("/page", HTML_PAGE, "text/html")
    start = server.redirect("/r1", "/page")

    assert verdict(probe, start) == NOT_AN_IMAGE


def test_too_many_redirects_are_refused(server: IconServer, probe: HttpIconProbe) -> None:
    server.serve("/final.png", tiny_png(), "image/png")
    server.redirect("/r4", "/final.png")
    server.redirect("/r3", "/r4")
    server.redirect("/r2", "/r3")
    start = server.redirect("/r1", "/r2")

    assert verdict(probe, start) == "redirects too many times"
    assert server.count("/final.png") == 0


def test_a_redirect_loop_is_refused(server: IconServer, probe: HttpIconProbe) -> None:
    start = server.redirect("/loop", "/loop")

    assert verdict(probe, start) == "redirects too many times"
    assert server.count("/loop") == 4


def test_a_redirect_without_location_is_judged_as_an_answer(
    server: IconServer, probe: HttpIconProbe
) -> None:
    url = server.route("/nowhere", Route(status=302))

    assert verdict(probe, url) == "could not be fetched (HTTP 302)"


def test_a_redirect_to_another_scheme_is_refused(server: IconServer, probe: HttpIconProbe) -> None:
    start = server.redirect("/file", "file:///etc/passwd")

    assert verdict(probe, start) == "must be an http or https URL"


def server_address(server: IconServer) -> IPAddress:
    """The server's address as the guard would return it."""
    return NetworkGuard(allow_private=True).resolve(server.url("/"))[0]


@pytest.mark.parametrize(
    "template",
    [
        "http://127.0.0.1:{port}/icon.png",
        "http://localhost:{port}/icon.png",
        "http://[::ffff:127.0.0.1]:{port}/icon.png",
        "http://127.1:{port}/icon.png",
    ],
)
def test_a_redirect_to_a_private_address_is_refused_without_contacting_it(
    server: IconServer,
    other_server: IconServer,
    make_probe: ProbeFactory,
    template: str,
) -> None:
    other_server.serve("/icon.png", tiny_png(), "image/png")
    server.redirect("/start", template.format(port=other_server.port))
    probe = make_probe(AliasGuard({"icons.example": server_address(server)}))

    message = verdict(probe, f"http://icons.example:{server.port}/start")

    assert message == PRIVATE_REFUSAL
    assert server.count("/start") == 1
    assert other_server.count() == 0


def test_the_alias_guard_lets_the_first_hop_through(
    server: IconServer, make_probe: ProbeFactory
) -> None:
    # The refusals above come from the redirect, not from the first hop.
    server.serve("/icon.png", tiny_png(), "image/png")
    probe = make_probe(AliasGuard({"icons.example": server_address(server)}))

    assert verdict(probe, f"http://icons.example:{server.port}/icon.png") is None


# -- SSRF on the first hop ------------------------------------------------------


def test_private_urls_are_refused_without_any_request(
    server: IconServer, make_probe: ProbeFactory, requests_made: list[httpx.Request]
) -> None:
    server.serve("/icon.png", tiny_png(), "image/png")
    probe = make_probe(NetworkGuard(allow_private=False))
    urls = [
        server.url("/icon.png"),
        "http://127.0.0.1/icon.png",
        "http://[::1]/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:10.0.0.1]/",
        "http://10.1.2.3/i.png",
        "http://192.168.0.1/i.png",
        "http://0.0.0.0/i.png",
        f"http://localhost:{server.port}/icon.png",
    ]

    for url in urls:
        assert verdict(probe, url) == PRIVATE_REFUSAL, url

    assert requests_made == []
    assert server.count() == 0


@pytest.mark.parametrize("url", ["ftp://example.com/i.png", "file:///etc/passwd", "not a url"])
def test_non_http_urls_are_refused(
    make_probe: ProbeFactory, requests_made: list[httpx.Request], url: str
) -> None:
    probe = make_probe(NetworkGuard(allow_private=False))

    assert verdict(probe, url) == "must be an http or https URL"
    assert requests_made == []


# -- failures to fetch ----------------------------------------------------------


def test_a_server_that_stalls_times_out(server: IconServer, make_probe: ProbeFactory) -> None:
    url = server.route("/stall.png", Route(body=tiny_png(), delay=10.0))
    probe = make_probe(timeout=0.2)

    started = time.monotonic()
    message = verdict(probe, url)

    assert message == "could not be fetched in time"
    assert time.monotonic() - started < 2.0


def test_a_closed_port_cannot_be_fetched(probe: HttpIconProbe) -> None:
    url = f"http://127.0.0.1:{closed_port()}/icon.png"

    assert verdict(probe, url) == "could not be fetched"


def test_a_trickling_server_is_cut_off(server: IconServer, make_probe: ProbeFactory) -> None:
    body = PNG_SIGNATURE + b"\x00" * 4  # 12 bytes, one every 0.08 s: ~1 s in all
    url = server.serve("/slow.png", body, "image/png", chunked=True, chunk_size=1, trickle=0.08)
    probe = make_probe(timeout=0.25, deadline=0.4)

    started = time.monotonic()
    message = verdict(probe, url)

    assert time.monotonic() - started < 0.7
    assert message == "could not be fetched in time"


# -- cache ----------------------------------------------------------------------


def test_an_accepted_icon_is_fetched_once(server: IconServer, probe: HttpIconProbe) -> None:
    url = server.serve("/icon.png", tiny_png(), "image/png")

    for _ in range(3):
        assert verdict(probe, url) is None

    assert server.count("/icon.png") == 1


def test_a_refusal_is_cached_too(server: IconServer, probe: HttpIconProbe) -> None:
    missing = server.url("/missing.png")
    gif = server.serve("/icon.gif", TINY_GIF, "image/gif")

    assert verdict(probe, missing) == "could not be fetched (HTTP 404)"
    assert verdict(probe, missing) == "could not be fetched (HTTP 404)"
    assert verdict(probe, gif) == NOT_AN_IMAGE
    assert verdict(probe, gif) == NOT_AN_IMAGE

    assert server.count("/missing.png") == 1
    assert server.count("/icon.gif") == 1


def test_a_timeout_is_cached(server: IconServer, make_probe: ProbeFactory) -> None:
    url = server.route("/stall.png", Route(body=tiny_png(), delay=10.0))
    probe = make_probe(timeout=0.2)

    assert verdict(probe, url) == "could not be fetched in time"
    assert verdict(probe, url) == "could not be fetched in time"
    assert server.count("/stall.png") == 1


def test_the_cache_is_per_url(server: IconServer, probe: HttpIconProbe) -> None:
    server.serve("/icon.png", tiny_png(), "image/png")

    assert verdict(probe, server.url("/icon.png")) is None
    assert verdict(probe, server.url("/icon.png?v=2")) == "could not be fetched (HTTP 404)"

    assert server.count() == 2


def test_a_redirect_chain_is_cached_as_a_whole(server: IconServer, probe: HttpIconProbe) -> None:
    server.serve("/final.png", tiny_png(), "image/png")
    start = server.redirect("/r1", "/final.png")

    assert verdict(probe, start) is None
    assert verdict(probe, start) is None
    assert server.count() == 2


# -- HTTPS ----------------------------------------------------------------------


@contextmanager
def https_icon_server(tls: Tls, cert_name: str) -> Iterator[IconServer]:
    """An HTTPS icon server where ``localhost`` resolves, with a certificate for
    ``cert_name`` from the test CA."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.ca.issue_cert(cert_name).configure_cert(context)
    with running_icon_server(context, host=localhost_address()) as server:
        server.serve("/icon.png", tiny_png(), "image/png")
        yield server


def test_an_https_icon_is_verified_against_the_url_host(make_probe: ProbeFactory) -> None:
    tls = make_ca()
    with https_icon_server(tls, "localhost") as server:
        probe = make_probe(verify=tls.client_context)

        assert verdict(probe, server.url("/icon.png", "localhost")) is None

    [hit] = server.hits
    assert hit.host == f"localhost:{server.port}"


@pytest.mark.parametrize("cert_name", ["other.example", "127.0.0.1"])
def test_an_https_icon_with_a_certificate_for_another_name_is_refused(
    make_probe: ProbeFactory, cert_name: str
) -> None:
    tls = make_ca()
    with https_icon_server(tls, cert_name) as server:
        probe = make_probe(verify=tls.client_context)

        assert verdict(probe, server.url("/icon.png", "localhost")) == "could not be fetched"

    assert server.count() == 0


def test_an_https_icon_by_address_needs_a_certificate_for_the_address(
    make_probe: ProbeFactory,
) -> None:
    tls = make_ca()
    with https_icon_server(tls, "localhost") as server:
        probe = make_probe(verify=tls.client_context)

        assert verdict(probe, server.url("/icon.png")) == "could not be fetched"

    assert server.count() == 0


POOL_BUG = (
    "icons.py:73-79: the URL is rewritten to the IP and httpcore pools connections by "
    "(scheme, IP, port) only, ignoring the sni_hostname extension; a TLS connection "
    "verified for one host is reused for another host pinned to the same address, whose "
    "certificate is then never checked"
)


def test_a_connection_verified_for_one_host_is_not_reused_for_another(
    make_probe: ProbeFactory,
) -> None:
    tls = make_ca()
    with https_icon_server(tls, "localhost") as server:
        probe = make_probe(verify=tls.client_context)
        server.serve("/other.png", tiny_png(), "image/png")

        assert verdict(probe, server.url("/icon.png", "localhost")) is None
        # Same socket address, a name the certificate does not cover.
        assert verdict(probe, server.url("/other.png")) == "could not be fetched"

    assert server.count("/other.png") == 0


def test_a_redirect_to_another_name_on_the_same_address_is_verified_again(
    make_probe: ProbeFactory,
) -> None:
    # Passes today only because a redirect's unread body makes httpcore drop the
    # connection instead of pooling it (see POOL_BUG for the pooled case).
    tls = make_ca()
    with https_icon_server(tls, "localhost") as server:
        probe = make_probe(verify=tls.client_context)
        server.redirect("/start", server.url("/icon.png"))  # by IP: not covered

        assert verdict(probe, server.url("/start", "localhost")) == "could not be fetched"

    assert server.count("/icon.png") == 0
