"""Single sign-on end to end: the real app and a fake OpenID provider over HTTPS, the
browser's redirects followed by hand (start -> provider -> callback -> exchange)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.cookiejar import Cookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit, urlunsplit

import httpx
import pytest
from joserfc.jwk import RSAKey
from starlette.testclient import TestClient

from pushcore import Services, build_services, load_settings
from pushcore.config import Settings
from pushcore.domain.errors import Unavailable
from pushcore.domain.oidc import CALLBACK_PATH
from pushcore_http import create_app
from pushcore_http.routes.oidc import BROWSER_COOKIE
from tests.fakes.oidc_provider import CLIENT_ID, CLIENT_SECRET, FakeProvider, ProviderTls, visit
from tests.http.conftest import BASE


def sso_settings(
    data_dir: Path, tls: ProviderTls, issuer: str, public_url: str = BASE, **settings: Any
) -> Settings:
    """Single sign-on at ``issuer``, trusting the test CA (and any other ``settings``)."""
    return load_settings(
        env={},
        data_dir=data_dir,
        public_url=public_url,
        oidc_issuer=issuer,
        oidc_client_id=CLIENT_ID,
        oidc_client_secret=CLIENT_SECRET,
        ca_file=tls.ca_file,
        **settings,
    )


@contextmanager
def sso_app(data_dir: Path, tls: ProviderTls, issuer: str, **settings: Any) -> Iterator[TestClient]:
    """An app of its own with :func:`sso_settings`."""
    services = build_services(sso_settings(data_dir, tls, issuer, **settings))
    try:
        with TestClient(create_app(services, run_engine=False), follow_redirects=False) as client:
            yield client
    finally:
        services.close()


@pytest.fixture
def sso(tmp_path: Path, tls: ProviderTls, provider: FakeProvider) -> Iterator[Services]:
    # A trailing slash on the public URL is not doubled in the redirect URI.
    settings = sso_settings(
        tmp_path / "data", tls, provider.issuer, public_url=BASE + "/", oidc_name="Example SSO"
    )
    services = build_services(settings)
    yield services
    services.close()


class Browser:
    """A person's browser: keeps cookies, follows each redirect only when told."""

    def __init__(self, client: TestClient, tls: ProviderTls) -> None:
        self.client = client
        self.tls = tls

    def start(self, next_path: str | None = "/app/") -> str:
        """Open the start URL; where it sends the browser (the provider)."""
        params = {} if next_path is None else {"next": next_path}
        response = self.client.get("/api/auth/oidc/start", params=params)
        assert response.status_code == 302, response.text
        return str(response.headers["location"])

    def at_provider(self, authorize_url: str) -> str:
        """The provider signs the person in; the callback URL it sends them back to."""
        return visit(authorize_url, self.tls.client)

    def back(self, callback_url: str) -> str:
        """Open the callback URL; where pushcore sends the browser (the app)."""
        response = self.client.get(callback_url)
        assert response.status_code == 302, response.text
        assert response.headers["cache-control"] == "no-store"
        return str(response.headers["location"])

    def sign_in(self, next_path: str = "/app/") -> str:
        """The whole round trip; the app URL it lands on."""
        return self.back(self.at_provider(self.start(next_path)))

    def exchange(self, code: str) -> httpx.Response:
        response: httpx.Response = self.client.post("/api/auth/oidc/exchange", json={"code": code})
        return response


@pytest.fixture
def browser(sso: Services, tls: ProviderTls) -> Iterator[Browser]:
    with TestClient(create_app(sso, run_engine=False), follow_redirects=False) as client:
        yield Browser(client, tls)


def fragment(location: str, name: str) -> str:
    """The value of ``name`` in the location's fragment."""
    values = parse_qs(urlsplit(location).fragment)
    assert name in values, location
    return values[name][0]


def with_query(url: str, **changes: str) -> str:
    parts = urlsplit(url)
    query = {k: v[0] for k, v in parse_qs(parts.query).items()} | changes
    return urlunsplit(parts._replace(query="&".join(f"{k}={v}" for k, v in query.items())))


def round_trip_cookies(browser: Browser) -> list[Cookie]:
    """The cookies of round trips under way (the PKCE verifiers), not the browser's own."""
    jar = browser.client.cookies.jar
    return [c for c in jar if c.name.startswith("pushcore_oidc_") and c.name != BROWSER_COOKIE]


def account_exists(services: Services, account_id: str) -> bool:
    with services.store.read() as tx:
        return tx.accounts.get(account_id) is not None


def test_methods_name_the_provider(browser: Browser) -> None:
    answer = browser.client.get("/api/auth/methods").json()
    assert answer["oidc"] == {"name": "Example SSO"}


def test_start_sends_the_browser_to_the_provider_with_pkce_state_and_nonce(
    browser: Browser, provider: FakeProvider
) -> None:
    url = urlsplit(browser.start())
    assert f"{url.scheme}://{url.netloc}{url.path}" == f"{provider.issuer}/authorize"
    query = {k: v[0] for k, v in parse_qs(url.query).items()}
    assert query["response_type"] == "code"
    assert query["client_id"] == CLIENT_ID
    assert query["redirect_uri"] == BASE + CALLBACK_PATH
    assert query["scope"] == "openid profile email"
    assert query["code_challenge_method"] == "S256"
    assert len(query["code_challenge"]) == 43
    assert len(query["state"]) == len(query["nonce"]) == 43
    assert query["state"] != query["nonce"]
    # The verifier stays in the browser: an HttpOnly cookie only the callback is sent.
    cookie = next(c for c in round_trip_cookies(browser))
    assert cookie.path == CALLBACK_PATH
    assert cookie.has_nonstandard_attr("HttpOnly")


def test_a_sign_in_ends_in_a_session_whose_token_works(
    browser: Browser, sso: Services, provider: FakeProvider
) -> None:
    landed = browser.sign_in("/app/subscribe/falcon-7k2q")
    assert landed.startswith(BASE + "/app/subscribe/falcon-7k2q#signin=")
    answer = browser.exchange(fragment(landed, "signin"))
    assert answer.status_code == 200, answer.text
    session = answer.json()
    assert session["tokenType"] == "Bearer"
    assert session["refreshToken"].startswith("psr_")
    # The id is the provider's, kept as given (not lowercased like a local one).
    assert session["account"] == {"id": "Carol", "plan": "free"}
    bearer = {"Authorization": f"Bearer {session['accessToken']}"}
    assert browser.client.get("/api/account", headers=bearer).json()["id"] == "Carol"
    created = browser.client.post(
        "/api/keys", json={"name": "sso", "scopes": ["notifications:write"]}, headers=bearer
    )
    assert created.status_code == 201, created.text
    # The code was redeemed with the verifier and the client's credentials (Basic).
    (request,) = provider.token_requests
    assert request["grant_type"] == "authorization_code"
    assert len(request["code_verifier"]) == 43
    assert "client_secret" not in request
    # The round trip's cookie is gone.
    assert not round_trip_cookies(browser)


def test_the_account_claim_is_configurable(
    tmp_path: Path, tls: ProviderTls, provider: FakeProvider
) -> None:
    with sso_app(tmp_path / "other", tls, provider.issuer, oidc_account_claim="email") as app:
        landed = Browser(app, tls).sign_in()
        session = Browser(app, tls).exchange(fragment(landed, "signin")).json()
    assert session["account"]["id"] == "carol@example.com"


@pytest.mark.parametrize(
    "given",
    ["https://evil.example/", "//evil.example/app/", "/\\evil.example", "javascript:alert(1)",
     "app/", "/app/#x", "/app/\n", ""],
)  # fmt: skip
def test_next_must_be_a_path_of_this_site(browser: Browser, given: str) -> None:
    assert browser.sign_in(given).startswith(BASE + "/app/#signin=")


def test_a_tampered_state_signs_nobody_in(browser: Browser, sso: Services) -> None:
    callback = browser.at_provider(browser.start())
    state = parse_qs(urlsplit(callback).query)["state"][0]
    tampered = with_query(callback, state=state[:-1] + ("A" if state[-1] != "A" else "B"))
    assert browser.back(tampered) == BASE + "/app/#signin-error=state"
    assert not account_exists(sso, "Carol")


def test_a_state_is_good_once(browser: Browser, sso: Services) -> None:
    callback = browser.at_provider(browser.start())
    # A second browser tab replays it (the round trip's cookie still there).
    cookies = dict(browser.client.cookies)
    assert "#signin=" in browser.back(callback)
    browser.client.cookies.update(cookies)
    assert browser.back(callback) == BASE + "/app/#signin-error=state"


def test_a_callback_in_another_browser_signs_nobody_in(browser: Browser, sso: Services) -> None:
    # Login CSRF: someone's own callback URL, opened by a victim whose browser never
    # started that round trip (it has no verifier cookie).
    callback = browser.at_provider(browser.start())
    browser.client.cookies.clear()
    assert browser.back(callback) == BASE + "/app/#signin-error=state"
    assert not account_exists(sso, "Carol")


def test_a_wrong_nonce_signs_nobody_in(
    browser: Browser, sso: Services, provider: FakeProvider
) -> None:
    provider.claims_override = {"nonce": "another-round-trips-nonce"}
    assert browser.sign_in() == BASE + "/app/#signin-error=nonce"
    provider.claims_override = {"nonce": None}
    assert browser.sign_in() == BASE + "/app/#signin-error=nonce"
    assert not account_exists(sso, "Carol")


def test_an_expired_id_token_signs_nobody_in(
    browser: Browser, sso: Services, provider: FakeProvider
) -> None:
    now = int(time.time())
    provider.claims_override = {"iat": now - 7200, "exp": now - 3600}
    assert browser.sign_in() == BASE + "/app/#signin-error=expired"
    assert not account_exists(sso, "Carol")


@pytest.mark.parametrize(
    "override",
    [{"aud": "another-client"}, {"iss": "https://another.example"}, {"azp": "another-client"},
     {"aud": [CLIENT_ID, "another-client"]}],
)  # fmt: skip
def test_an_id_token_for_someone_else_signs_nobody_in(
    browser: Browser, sso: Services, provider: FakeProvider, override: dict[str, Any]
) -> None:
    provider.claims_override = override
    assert browser.sign_in() == BASE + "/app/#signin-error=token"
    assert not account_exists(sso, "Carol")


def test_an_id_token_signed_with_another_key_signs_nobody_in(
    browser: Browser, sso: Services, provider: FakeProvider
) -> None:
    browser.sign_in()  # the provider's real key is fetched and cached
    provider.key = RSAKey.generate_key(2048, parameters={"kid": "k1"})  # a forger's, same kid
    assert browser.sign_in() == BASE + "/app/#signin-error=token"


def test_an_id_token_without_the_account_claim_signs_nobody_in(
    browser: Browser, provider: FakeProvider
) -> None:
    provider.claims_override = {"preferred_username": None}
    assert browser.sign_in() == BASE + "/app/#signin-error=account"


def test_a_person_who_declines_lands_in_the_app_told_so(
    browser: Browser, provider: FakeProvider
) -> None:
    provider.deny = True
    assert browser.sign_in() == BASE + "/app/#signin-error=denied"


def test_a_one_time_code_is_good_once(browser: Browser) -> None:
    code = fragment(browser.sign_in(), "signin")
    assert browser.exchange(code).status_code == 200
    again = browser.exchange(code)
    assert again.status_code == 401
    assert again.json()["code"] == "unauthorized"


@pytest.mark.parametrize("code", ["x", "A" * 43, "psr_" + "A" * 43])
def test_unknown_codes_are_refused(browser: Browser, code: str) -> None:
    assert browser.exchange(code).status_code == 401


def test_an_unreachable_provider_lands_in_the_app_told_so(tmp_path: Path, tls: ProviderTls) -> None:
    # Nothing listens on the discard port.
    with sso_app(tmp_path / "data", tls, "https://127.0.0.1:9") as app:
        answer = app.get("/api/auth/oidc/start")
    assert answer.status_code == 302
    assert answer.headers["location"] == BASE + "/app/#signin-error=provider"


def test_without_configuration_there_is_no_single_sign_on(client: TestClient) -> None:
    assert client.get("/api/auth/methods").json()["oidc"] is None
    assert client.get("/api/auth/oidc/start", follow_redirects=False).status_code == 404
    refused = client.post("/api/auth/oidc/exchange", json={"code": "A" * 43})
    assert refused.status_code == 404


def test_the_servers_debug_log_holds_no_secret_of_the_flow(
    browser: Browser, provider: FakeProvider, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    test_thread = threading.get_ident()
    start = browser.start()
    callback = browser.at_provider(start)
    landed = browser.back(callback)
    code = fragment(landed, "signin")
    session = browser.exchange(code).json()
    browser.exchange(code)  # refused: logged as a refusal, if at all
    browser.back(callback)  # the state again: refused and logged
    provider.claims_override = {"nonce": "x"}
    browser.sign_in()  # refused at the nonce
    # What the server wrote: the test's own client (the browser) logs its URLs too.
    logged = "\n".join(
        f"{r.name} {r.getMessage()} {r.exc_text or ''}"
        for r in caplog.records
        if r.thread != test_thread
    )
    assert "single sign-on refused: state" in logged
    assert "single sign-on refused: nonce" in logged
    query = parse_qs(urlsplit(callback).query)
    cookies = [c.value for c in browser.client.cookies.jar if c.value]
    secrets = [
        *provider.secrets_seen,
        CLIENT_SECRET,
        query["state"][0],
        query["code"][0],
        parse_qs(urlsplit(start).query)["nonce"][0],
        code,
        session["accessToken"],
        session["refreshToken"],
        *cookies,
    ]
    assert [s[:12] for s in secrets if s in logged] == []


def test_a_database_that_cannot_serve_lands_in_the_app_told_so(
    browser: Browser, sso: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    callback = browser.at_provider(browser.start())

    def unavailable(*args: object) -> None:
        raise Unavailable("The database cannot be reached; try again shortly")

    assert sso.oidc is not None
    monkeypatch.setattr(sso.store, "transaction", unavailable)
    assert browser.back(callback) == BASE + "/app/#signin-error=unavailable"
    assert browser.client.get("/api/auth/oidc/start").headers["location"] == (
        BASE + "/app/#signin-error=unavailable"
    )
