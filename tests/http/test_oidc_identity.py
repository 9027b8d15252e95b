"""Who single sign-on signs in, against an attacker: accounts bound to the provider's
identity (``iss``, ``sub``), linked only from a signed-in session; ``email_verified``
when the email is the account; the one-time code good only in the browser that
started; the exchange's limit per address. The real app and the fake provider over
HTTPS, on SQLite and PostgreSQL (tests/http/test_oidc.py has the protocol's checks)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from pushcore import Services, build_services
from pushcore.domain.oidc import CALLBACK_PATH
from pushcore_http import create_app
from tests.fakes.oidc_provider import FakeProvider, ProviderTls
from tests.http.conftest import BASE
from tests.http.test_oidc import Browser, fragment, sso_settings

PASSWORD = "a stranger's l0ng passphrase"
APP = {"X-Pushcore-App": "1"}
CLASH = BASE + "/app/#signin-error=account_exists"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str | None:
    """None (SQLite in the data directory), or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return None
    url: str = request.getfixturevalue("pg_cluster").create_database()
    return url


@pytest.fixture
def services(
    tmp_path: Path, tls: ProviderTls, provider: FakeProvider, database_url: str | None
) -> Iterator[Services]:
    """Sign-up and single sign-on both on."""
    settings = sso_settings(
        tmp_path / "data", tls, provider.issuer, signup=True, database_url=database_url
    )
    built = build_services(settings)
    yield built
    built.close()


@pytest.fixture
def new_browser(services: Services, tls: ProviderTls) -> Iterator[Callable[[], Browser]]:
    """A fresh browser (a cookie jar of its own) on the app, each time it is called."""
    app = create_app(services, run_engine=False)
    opened: list[TestClient] = []

    def open_one() -> Browser:
        client = TestClient(app, follow_redirects=False)
        client.__enter__()
        opened.append(client)
        return Browser(client, tls)

    yield open_one
    for client in opened:
        client.__exit__(None, None, None)


def signed_in_as(browser: Browser, landed: str) -> str:
    """Exchange the code ``landed`` carries in ``browser``; the session's account id."""
    answer = browser.exchange(fragment(landed, "signin"))
    assert answer.status_code == 200, answer.text
    account: str = answer.json()["account"]["id"]
    return account


def sign_up(browser: Browser, account: str) -> dict[str, str]:
    """Sign ``account`` up with a password; the session's bearer header."""
    answer = browser.client.post(
        "/api/auth/signup", json={"account": account, "password": PASSWORD}
    )
    assert answer.status_code == 201, answer.text
    return {"Authorization": f"Bearer {answer.json()['accessToken']}"}


def password_works(browser: Browser, account: str) -> bool:
    answer = browser.client.post("/api/auth/login", json={"account": account, "password": PASSWORD})
    return bool(answer.status_code == 200)


def has_account(services: Services, account_id: str) -> bool:
    with services.store.read() as tx:
        return tx.accounts.get(account_id) is not None


def link(browser: Browser, bearer: dict[str, str]) -> str:
    """Ask to link single sign-on to the signed-in account; the provider's URL."""
    answer = browser.client.post("/api/auth/oidc/link", json={"next": "/app/"}, headers=bearer)
    assert answer.status_code == 200, answer.text
    assert answer.headers["cache-control"] == "no-store"
    url: str = answer.json()["url"]
    return url


# (a) Accounts bound to the provider's identity ----------------------------------------


def test_a_stranger_who_signed_up_the_name_first_never_gets_the_persons_sign_in(
    new_browser: Callable[[], Browser], provider: FakeProvider, services: Services
) -> None:
    stranger, frank = new_browser(), new_browser()
    sign_up(stranger, "frank")
    provider.user["preferred_username"] = "frank"
    # The real frank's first single sign-on: a clash, nobody signed in.
    assert frank.sign_in() == CLASH
    assert frank.sign_in() == CLASH  # and again: nothing was bound by the first
    # What the stranger's password opens never held anything of the real frank's.
    with services.store.read() as tx:
        assert tx.sign_ins.bound_account(provider.issuer, "f3a1-uuid") is None
        assert not tx.sign_ins.is_bound("frank")


def test_another_identity_naming_an_account_is_a_clash(
    new_browser: Callable[[], Browser], provider: FakeProvider
) -> None:
    carol = new_browser()
    assert signed_in_as(carol, carol.sign_in()) == "Carol"
    # A second person at the provider whose claim names the same account (a reused
    # or changed username): not Carol's account.
    provider.user["sub"] = "another-person"
    assert new_browser().sign_in() == CLASH


def test_an_identity_signs_into_its_account_whatever_its_claim_says_later(
    new_browser: Callable[[], Browser], provider: FakeProvider, services: Services
) -> None:
    carol = new_browser()
    assert signed_in_as(carol, carol.sign_in()) == "Carol"
    provider.user["preferred_username"] = "Caroline"  # renamed at the provider
    assert signed_in_as(carol, carol.sign_in()) == "Carol"
    assert not has_account(services, "Caroline")


def test_sign_up_never_takes_an_id_single_sign_on_made(
    new_browser: Callable[[], Browser], provider: FakeProvider
) -> None:
    provider.user["preferred_username"] = "carol"
    carol, stranger = new_browser(), new_browser()
    assert signed_in_as(carol, carol.sign_in()) == "carol"
    taken = stranger.client.post(
        "/api/auth/signup", json={"account": "carol", "password": PASSWORD}
    )
    assert taken.status_code == 409
    assert taken.json()["code"] == "account_exists"
    assert not password_works(stranger, "carol")


def test_a_signed_in_person_links_their_identity_to_their_account(
    new_browser: Callable[[], Browser], provider: FakeProvider
) -> None:
    provider.user["preferred_username"] = "frank"
    frank = new_browser()
    bearer = sign_up(frank, "frank")
    assert frank.sign_in() == CLASH
    # From the signed-in session: to the provider, back, signed in to the account.
    landed = frank.back(frank.at_provider(link(frank, bearer)))
    assert landed.startswith(BASE + "/app/#signin=")
    assert signed_in_as(frank, landed) == "frank"
    # From then on, single sign-on in any browser signs into it.
    elsewhere = new_browser()
    assert signed_in_as(elsewhere, elsewhere.sign_in()) == "frank"


def test_a_link_to_an_identity_bound_to_another_account_is_refused(
    new_browser: Callable[[], Browser], provider: FakeProvider
) -> None:
    carol = new_browser()
    assert signed_in_as(carol, carol.sign_in()) == "Carol"
    dave = new_browser()
    bearer = sign_up(dave, "dave")
    landed = dave.back(dave.at_provider(link(dave, bearer)))
    assert landed == BASE + "/app/#signin-error=identity_linked"
    assert signed_in_as(carol, carol.sign_in()) == "Carol"


def test_a_link_opened_in_another_browser_links_nothing(
    new_browser: Callable[[], Browser], services: Services
) -> None:
    # The attacker asks to link, and has the victim's browser (signed in at the
    # provider) follow the URL: the callback comes without the attacker's cookies.
    attacker, victim = new_browser(), new_browser()
    url = link(attacker, sign_up(attacker, "mallory"))
    assert victim.back(victim.at_provider(url)) == BASE + "/app/#signin-error=state"
    assert signed_in_as(victim, victim.sign_in()) == "Carol"  # the victim's own account
    assert not password_works(attacker, "carol")


def test_linking_takes_a_signed_in_session(new_browser: Callable[[], Browser]) -> None:
    browser = new_browser()
    assert browser.client.post("/api/auth/oidc/link", json={}).status_code == 401
    bearer = sign_up(browser, "erin")
    key = browser.client.post(
        "/api/keys", json={"name": "k", "scopes": ["notifications:write"]}, headers=bearer
    ).json()["key"]
    refused = browser.client.post("/api/auth/oidc/link", json={}, headers={"X-API-Key": key})
    assert refused.status_code in (401, 403), refused.text
    # A POST without parameters may come without a body.
    assert browser.client.post("/api/auth/oidc/link", headers=bearer).status_code == 200


# (b) email_verified when the email is the account ---------------------------------------


@pytest.fixture
def by_email(services: Services, tmp_path: Path, tls: ProviderTls, provider: FakeProvider,
             database_url: str | None) -> Iterator[Browser]:  # fmt: skip
    settings = sso_settings(
        tmp_path / "email", tls, provider.issuer, oidc_account_claim="email",
        database_url=database_url,
    )  # fmt: skip
    built = build_services(settings)
    with TestClient(create_app(built, run_engine=False), follow_redirects=False) as client:
        yield Browser(client, tls)
    built.close()


# The claim is refused before any store is asked (test_a_verified_email_signs_in and the
# identity tests above run on both): on SQLite only.
@pytest.mark.parametrize("database_url", [None], ids=["sqlite"])
@pytest.mark.parametrize("verified", [None, False, "false", "False", 1, "yes"])
def test_an_unverified_email_signs_nobody_in(
    by_email: Browser, provider: FakeProvider, services: Services, verified: Any
) -> None:
    provider.user["email_verified"] = verified
    assert by_email.sign_in() == BASE + "/app/#signin-error=email_unverified"
    assert not has_account(services, "carol@example.com")


@pytest.mark.parametrize("verified", [True, "true"])
def test_a_verified_email_signs_in(
    by_email: Browser, provider: FakeProvider, verified: Any
) -> None:
    provider.user["email_verified"] = verified
    assert signed_in_as(by_email, by_email.sign_in()) == "carol@example.com"


# (c) The one-time code works only in the browser that started --------------------------


def test_a_code_opened_in_another_browser_signs_nobody_in(
    new_browser: Callable[[], Browser], services: Services
) -> None:
    attacker, victim = new_browser(), new_browser()
    code = fragment(attacker.sign_in(), "signin")
    # The victim's app exchanges it (the link https://server/app/#signin=CODE).
    through_app = victim.client.post("/app/session/oidc", json={"code": code}, headers=APP)
    assert through_app.status_code == 401, through_app.text
    assert "psr_" not in through_app.headers.get("set-cookie", "")  # no session cookie
    assert victim.exchange(code).status_code == 401
    # A victim who has a browser secret of their own (from a sign-in begun) is no better off.
    victim.start()
    assert victim.exchange(code).status_code == 401
    with services.store.read() as tx:
        carol = tx.accounts.get("Carol")
    assert carol is not None
    assert carol.last_sign_in_at is None  # nobody signed in
    # The code was left for the browser that started.
    assert (
        attacker.client.post("/app/session/oidc", json={"code": code}, headers=APP).status_code
        == 200
    )


def test_the_app_exchanges_the_code_with_the_browsers_cookie(
    new_browser: Callable[[], Browser],
) -> None:
    browser = new_browser()
    code = fragment(browser.sign_in(), "signin")
    answer = browser.client.post("/app/session/oidc", json={"code": code}, headers=APP)
    assert answer.status_code == 200, answer.text
    assert answer.json()["account"]["id"] == "Carol"


@pytest.mark.parametrize(("public_url", "secure"), [(BASE, False), ("https://push.example", True)])
def test_the_browser_cookie_is_httponly_lax_for_the_site(
    tmp_path: Path, tls: ProviderTls, provider: FakeProvider, public_url: str, secure: bool
) -> None:
    settings = sso_settings(tmp_path / "data", tls, provider.issuer, public_url=public_url)
    built = build_services(settings)
    try:
        with TestClient(create_app(built, run_engine=False), follow_redirects=False) as client:
            started = client.get("/api/auth/oidc/start")
    finally:
        built.close()
    assert started.status_code == 302
    cookies = started.headers.get_list("set-cookie")
    (browser,) = [c for c in cookies if c.startswith("pushcore_oidc_browser=")]
    flags = {part.strip().split("=")[0].lower(): part for part in browser.split(";")}
    assert "httponly" in flags
    assert flags["samesite"].strip().lower() == "samesite=lax"
    assert flags["path"].strip() == "Path=/"  # the exchange and the app's /app/session/oidc
    assert ("secure" in flags) is secure
    (verifier,) = [c for c in cookies if not c.startswith("pushcore_oidc_browser=")]
    assert f"Path={CALLBACK_PATH}" in verifier


# (d) The exchange is limited per address ---------------------------------------------


# The limiter is in memory, whatever the store: on SQLite only.
@pytest.mark.parametrize("database_url", [None], ids=["sqlite"])
def test_the_exchange_is_limited_per_address_like_failed_authentications(
    new_browser: Callable[[], Browser],
) -> None:
    browser = new_browser()
    answers = [browser.exchange("A" * 43) for _ in range(50)]
    assert {a.status_code for a in answers} == {401}  # a burst of 50 is let through
    for _ in range(50):
        answer = browser.exchange("A" * 43)
        if answer.status_code == 429:
            break
    assert answer.status_code == 429
    assert int(answer.headers["retry-after"]) >= 1
    assert answer.json()["code"] == "rate_limited"
