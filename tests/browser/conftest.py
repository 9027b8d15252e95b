"""The app in a real browser: Debian's Chromium driven by Playwright, against `pushctl serve`.

Playwright drives the system's Chromium (never `playwright install`, which would
download a browser). Without /usr/bin/chromium the tests skip, saying why;
.ci/run installs it, so they run in CI.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
from playwright.sync_api import (
    Browser,
    BrowserContext,
    Page,
    Playwright,
    ViewportSize,
    sync_playwright,
)

from tests.e2e.server import Server
from tests.fakes.webpush_server import WebPushServer, running_webpush_server

CHROMIUM = Path(os.environ.get("PUSHCORE_TEST_CHROMIUM", "/usr/bin/chromium"))
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PASSWORD = "correct horse battery"
AXE = Path(__file__).with_name("axe.min.js")
SERVER_ENV = {
    "PUSHCORE_SIGNUP": "true",
    "PUSHCORE_RATE_LIMIT": "0",
    "PUSHCORE_VAPID_SUBJECT": "mailto:tests@example.com",
}

if not CHROMIUM.exists():
    pytest.skip(
        f"the browser tests need Chromium at {CHROMIUM} (apt-get install -y chromium; "
        ".ci/run installs it)",
        allow_module_level=True,
    )


# Package scope, not session: Playwright's synchronous API keeps an event loop running
# in the main thread while its driver is up, and the tests after these (anyio's
# TestClient, the CLI's in-process transport) need that thread free of one.
@pytest.fixture(scope="package")
def playwright() -> Iterator[Playwright]:
    """Playwright's driver, for the browser tests only."""
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="package")
def browser(playwright: Playwright) -> Iterator[Browser]:
    """One headless Chromium; each test has contexts (cookies, storage) of its own."""
    chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
    yield chromium
    chromium.close()


class AppServer(Server):
    """`pushctl serve` with sign-up on, for people made by the tests."""

    def person(self, prefix: str = "p") -> str:
        """A new account with PASSWORD; its id."""
        account = f"{prefix}{secrets.token_hex(4)}"
        response = httpx.post(
            f"{self.base}/api/auth/signup", json={"account": account, "password": PASSWORD}
        )
        assert response.status_code == 201, response.text
        return account

    def bearer(self, account: str) -> dict[str, str]:
        """Authorization headers of a fresh session of ``account``."""
        response = httpx.post(
            f"{self.base}/api/auth/login", json={"account": account, "password": PASSWORD}
        )
        assert response.status_code == 200, response.text
        return {"Authorization": f"Bearer {response.json()['accessToken']}"}

    def stream(self, name: str, *subscribers: str) -> Publication:
        """A stream of a new account, followed by ``subscribers``, and a key to send with."""
        publisher = self.person("pub")
        key = httpx.post(
            f"{self.base}/api/keys",
            json={"name": "publish", "scopes": ["notifications:write"]},
            headers=self.bearer(publisher),
        ).json()["key"]
        stream = httpx.post(
            f"{self.base}/api/streams",
            json={"name": name, "description": f"About {name}"},
            headers={"X-API-Key": key},
        ).json()
        for account in subscribers:
            subscribed = httpx.post(
                f"{self.base}/api/streams/subscribe",
                json={"code": stream["code"]},
                headers=self.bearer(account),
            )
            assert subscribed.status_code == 201, subscribed.text
        return Publication(self.base, stream["id"], stream["code"], key, publisher)


@attrs.frozen
class Publication:
    """A stream made by :meth:`AppServer.stream`, and the key that sends to it."""

    base: str
    id: str
    code: str
    key: str
    publisher: str = ""  # the account that owns the stream

    def send(self, title: str, body: str = "", priority: str = "normal") -> None:
        """A stream send (immediate)."""
        sent = httpx.post(
            f"{self.base}/api/streams/{self.id}/send",
            json={"title": title, "priority": priority, **({"body": body} if body else {})},
            headers={"X-API-Key": self.key},
        )
        assert sent.status_code == 201, sent.text


@pytest.fixture
def webpush() -> Iterator[WebPushServer]:
    """The fake push service on loopback."""
    with running_webpush_server() as running:
        yield running


# Package scope: the tests each use accounts of their own, so one server serves them all
# (a `pushctl serve` start is ~1.9 CPU s and seconds of wall; one a module was 17 of them).
# A test that needs other settings, or stops its server, starts one of its own.
@pytest.fixture(scope="package")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """One server for the browser package (the tests each use accounts of their own)."""
    running = AppServer(tmp_path_factory.mktemp("app"), env=SERVER_ENV)
    running.start()
    yield running
    running.stop()


@pytest.fixture
def contexts(browser: Browser, server: AppServer) -> Iterator[Callable[[], BrowserContext]]:
    """Fresh browser profiles at 360 px wide (a small phone), one per person of a test."""
    made: list[BrowserContext] = []

    def new() -> BrowserContext:
        ctx = browser.new_context(base_url=server.base, viewport={"width": 360, "height": 780})
        ctx.set_default_timeout(10_000)
        made.append(ctx)
        return ctx

    yield new
    for ctx in made:
        ctx.close()


# A small phone (the app's first target) and a laptop: the tests of the app's look and
# feel run at both.
SIZES: dict[str, ViewportSize] = {
    "phone": {"width": 360, "height": 780},
    "desktop": {"width": 1280, "height": 860},
}


@pytest.fixture(params=sorted(SIZES))
def sized_page(
    request: pytest.FixtureRequest, browser: Browser, server: AppServer
) -> Iterator[Page]:
    """A page of a fresh profile at each of SIZES (the test runs once per size)."""
    ctx = browser.new_context(base_url=server.base, viewport=SIZES[request.param])
    ctx.set_default_timeout(10_000)
    yield watched(ctx.new_page())
    ctx.close()


@pytest.fixture
def context(contexts: Callable[[], BrowserContext]) -> BrowserContext:
    """A fresh browser profile."""
    return contexts()


@pytest.fixture
def page(context: BrowserContext) -> Page:
    """A page of ``context`` (see :func:`watched`)."""
    return watched(context.new_page())


def watched(opened: Page) -> Page:
    """A page of ``context`` that collects script errors and CSP refusals in ``problems``.

    An answer of 4xx is logged by Chromium as a console error too; those are the
    app's expected answers (a wrong password, a reload with no session), not problems.
    """
    problems: list[str] = []

    def console(message: Any) -> None:
        if message.type == "error" and not message.text.startswith("Failed to load resource"):
            problems.append(message.text)

    opened.on("console", console)
    opened.on("pageerror", lambda e: problems.append(str(e)))
    opened.problems = problems  # type: ignore[attr-defined]
    return opened


def sign_in(page: Page, account: str, path: str = "/app/") -> None:
    """Open ``path`` and sign in as ``account`` with the form."""
    page.goto(path)
    page.get_by_label("Account").fill(account)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("navigation", name="Main").wait_for()


# axe's rules that read colours: all that a colour scheme can change in the app, whose
# dark scheme sets colour properties only (app.css) on the same document.
COLOUR_RULES = ("color-contrast", "link-in-text-block")


def axe_scan(page: Page, rules: Sequence[str] = ()) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations on the page (injected by the test only),
    of ``rules`` only when given."""
    if not AXE.exists():
        pytest.fail(f"{AXE} missing (vendored from npm axe-core)")
    # Evaluated through the DevTools protocol, which the page's CSP does not govern
    # (a <script> tag would be refused, as it should be); once a document (the app moves
    # between screens without loading one), not the 500 kB again on every scan.
    if page.evaluate("() => typeof axe === 'undefined'"):
        page.evaluate(AXE.read_text(encoding="utf-8") + "\n;undefined")
    # Only the violations, made small in the page: axe's whole result (every rule that
    # passed, with the HTML of each node it looked at) crossed the DevTools protocol to
    # Python on every scan, the browser's largest cost in these tests.
    options: dict[str, Any] = {"resultTypes": ["violations"]}
    if rules:
        options["runOnly"] = {"type": "rule", "values": list(rules)}
    found: list[dict[str, Any]] = page.evaluate(
        """async (options) => (await axe.run(document, options)).violations
            .filter((v) => v.impact === "serious" || v.impact === "critical")
            .map((v) => ({
                id: v.id, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => n.html),
            }))""",
        options,
    )
    return found


def problems(page: Page) -> list[str]:
    """Script errors and CSP refusals seen on ``page``."""
    seen: list[str] = page.problems  # type: ignore[attr-defined]
    return seen
