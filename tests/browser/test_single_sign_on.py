"""Single sign-on in Chromium against `pushctl serve` and the fake provider over HTTPS:
the app's exchange carries the browser's cookie; an attacker's `#signin=CODE` link
signs a victim's browser into nothing; a clash is said in words."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urljoin

import pytest
from playwright.sync_api import APIRequestContext, Browser, BrowserContext, Page, expect

from pushcore.domain.oidc import CALLBACK_PATH
from tests.browser.conftest import SERVER_ENV, AppServer, watched
from tests.fakes.oidc_provider import (
    CLIENT_ID,
    CLIENT_SECRET,
    FakeProvider,
    provider_tls,
    running_provider,
)

SSO = "Example SSO"


@pytest.fixture(scope="module")
def sso(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[AppServer, FakeProvider]]:
    """`pushctl serve` with sign-up and single sign-on at the fake provider."""
    directory = tmp_path_factory.mktemp("sso")
    tls = provider_tls(directory)
    server = AppServer(directory / "data", env=dict(SERVER_ENV))
    with running_provider(tls.server, (server.base + CALLBACK_PATH,)) as provider:
        server.env.update(
            PUSHCORE_PUBLIC_URL=server.base,
            PUSHCORE_OIDC_ISSUER=provider.issuer,
            PUSHCORE_OIDC_CLIENT_ID=CLIENT_ID,
            PUSHCORE_OIDC_CLIENT_SECRET=CLIENT_SECRET,
            PUSHCORE_OIDC_NAME=SSO,
            PUSHCORE_CA_FILE=str(tls.ca_file),
        )
        server.start()
        try:
            yield server, provider
        finally:
            server.stop()


@pytest.fixture
def profiles(
    browser: Browser, sso: tuple[AppServer, FakeProvider]
) -> Iterator[list[BrowserContext]]:
    """Two browser profiles (the provider's certificate is the test CA's)."""
    server, _ = sso
    made = [browser.new_context(base_url=server.base, ignore_https_errors=True) for _ in range(2)]
    for ctx in made:
        ctx.set_default_timeout(10_000)
    yield made
    for ctx in made:
        ctx.close()


def code_made_in(request: APIRequestContext, base: str) -> str:
    """A whole sign-in by hand in one profile (its cookies), stopping before the app
    exchanges the code: the `#signin=` link an attacker would send."""
    location = "/api/auth/oidc/start?next=/app/"
    for _ in range(3):  # start -> provider -> callback -> the app
        answer = request.get(urljoin(base, location), max_redirects=0)
        assert answer.status == 302, answer.text()
        location = answer.headers["location"]
    assert "#signin=" in location, location
    return location.split("#signin=", 1)[1]


def test_the_app_signs_in_with_the_provider(
    profiles: list[BrowserContext], sso: tuple[AppServer, FakeProvider]
) -> None:
    _, provider = sso
    provider.user.update(sub="dana-sub", preferred_username="dana")
    page: Page = watched(profiles[0].new_page())
    page.goto("/app/")
    page.get_by_role("link", name=SSO).click()
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()
    cookies = {c["name"]: c for c in profiles[0].cookies()}
    assert cookies["pushcore_oidc_browser"]["httpOnly"]
    assert cookies["pushcore_oidc_browser"]["sameSite"] == "Lax"


def test_an_attackers_sign_in_link_signs_the_victim_into_nothing(
    profiles: list[BrowserContext], sso: tuple[AppServer, FakeProvider]
) -> None:
    server, provider = sso
    attacker, victim = profiles
    provider.user.update(sub="mallory-sub", preferred_username="mallory")
    code = code_made_in(attacker.request, server.base)
    page = watched(victim.new_page())
    page.goto(f"/app/#signin={code}")
    expect(page.get_by_text("another browser")).to_be_visible()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    expect(page.get_by_role("navigation", name="Main")).to_have_count(0)
    # The browser that started still can.
    own = watched(attacker.new_page())
    own.goto(f"/app/#signin={code}")
    expect(own.get_by_role("navigation", name="Main")).to_be_visible()


def test_a_clash_is_said_in_words(
    profiles: list[BrowserContext], sso: tuple[AppServer, FakeProvider]
) -> None:
    server, provider = sso
    taken = server.person("taken")
    provider.user.update(sub="namesake-sub", preferred_username=taken)
    page = watched(profiles[0].new_page())
    page.goto("/app/")
    page.get_by_role("link", name=SSO).click()
    expect(page.get_by_text("an account of that name exists")).to_be_visible()
    expect(page.get_by_role("navigation", name="Main")).to_have_count(0)
