"""End to end: single sign-on across two `pushctl serve` processes on one database, against
a fake OpenID provider over HTTPS, with every log line they write at DEBUG (and the access
log) read afterwards for the secrets of the flow.

A browser behind a load balancer: the round trip starts at one process, comes back to
the other, and the app exchanges its code at the first; the session works at either.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from pushcore.domain.oidc import CALLBACK_PATH
from tests.e2e.server import Server
from tests.fakes.oidc_provider import (
    CLIENT_ID,
    CLIENT_SECRET,
    FakeProvider,
    ProviderTls,
    provider_tls,
    running_provider,
    visit,
)

pytestmark = pytest.mark.slow


@pytest.fixture
def tls(tmp_path: Path) -> ProviderTls:
    return provider_tls(tmp_path)


@pytest.fixture
def two(tmp_path: Path, tls: ProviderTls) -> Iterator[tuple[Server, Server, FakeProvider]]:
    first = Server(tmp_path / "data", command=["serve", "--no-engine"])
    public = first.base  # the balancer's address, as people see it
    with running_provider(tls.server, (public + CALLBACK_PATH,)) as provider:
        env = {
            "PUSHCORE_PUBLIC_URL": public,
            "PUSHCORE_OIDC_ISSUER": provider.issuer,
            "PUSHCORE_OIDC_CLIENT_ID": CLIENT_ID,
            "PUSHCORE_OIDC_CLIENT_SECRET": CLIENT_SECRET,
            "PUSHCORE_CA_FILE": str(tls.ca_file),
            "PUSHCORE_LOG_LEVEL": "debug",
            "PUSHCORE_ACCESS_LOG": "true",
        }
        first.env.update(env)
        second = Server(tmp_path / "data", env, command=["serve"])
        second.log = tmp_path / "second.log"
        first.start()
        try:
            second.start()
            try:
                yield first, second, provider
            finally:
                second.stop()
        finally:
            first.stop()


def test_a_sign_in_across_two_processes_leaves_no_secret_in_any_log(
    two: tuple[Server, Server, FakeProvider], tls: ProviderTls
) -> None:
    first, second, provider = two
    with (
        httpx.Client(base_url=first.base) as at_first,
        httpx.Client(base_url=second.base) as at_second,
    ):
        started = at_first.get("/api/auth/oidc/start", params={"next": "/app/"})
        assert started.status_code == 302, started.text
        verifier = started.cookies.get(next(iter(started.cookies.keys())))
        assert verifier
        callback = urlsplit(visit(started.headers["location"], tls.client))
        # Back through the balancer to the other process, with the browser's cookie.
        cookie = "; ".join(f"{name}={value}" for name, value in started.cookies.items())
        back = at_second.get(f"{callback.path}?{callback.query}", headers={"Cookie": cookie})
        assert back.status_code == 302, back.text
        landed = back.headers["location"]
        assert landed.startswith(first.base + "/app/#signin=")
        code = parse_qs(urlsplit(landed).fragment)["signin"][0]
        session = at_first.post("/api/auth/oidc/exchange", json={"code": code})
        assert session.status_code == 200, session.text
        tokens = session.json()
        bearer = {"Authorization": f"Bearer {tokens['accessToken']}"}
        assert at_second.get("/api/account", headers=bearer).json()["id"] == "Carol"
        assert at_first.post("/api/auth/oidc/exchange", json={"code": code}).status_code == 401
        state = parse_qs(callback.query)["state"][0]
    first.stop()
    second.stop()
    logs = first.log.read_text() + second.log.read_text()
    assert "/api/auth/oidc/callback" in logs  # the access log was on, and saw it
    assert "single sign-on: Carol signed in" in logs
    secrets = [
        *provider.secrets_seen,  # the authorization code, the ID token, the access token
        CLIENT_SECRET,
        verifier,
        state,
        code,
        tokens["accessToken"],
        tokens["refreshToken"],
    ]
    assert len(provider.secrets_seen) == 3
    leaked = [secret[:12] for secret in secrets if secret in logs]
    assert leaked == []
