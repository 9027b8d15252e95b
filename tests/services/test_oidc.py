"""Single sign-on's use cases on a fake clock, with a scripted provider in place of the
real one (tests/http/test_oidc.py takes the real one end to end): what expires when,
what is spent, and what is swept."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from pushcore import Services, build_services, load_settings
from pushcore.delivery.retention import Retention, RetentionConfig
from pushcore.domain.errors import Unauthorized
from pushcore.domain.oidc import CODE_TTL, FLOW_TTL, SignInError, SignInFailed
from pushcore.services import OidcService
from pushcore.services.oidc import Arrival, Departure
from tests.fakes.clock import FakeClock
from tests.services.conftest import SeededRandom


class ScriptedProvider:
    """An IdentityProvider that signs in ``user`` at once, with the nonce it was sent."""

    def __init__(self) -> None:
        self.user = "Dana"
        self.nonce: str | None = None
        self.failure: SignInFailed | None = None

    async def authorization_url(self, state: str, nonce: str, verifier: str) -> str:
        if self.failure is not None:
            raise self.failure
        self.nonce = nonce
        return f"https://idp.example/authorize?state={state}"

    async def redeem(self, code: str, verifier: str) -> Mapping[str, object]:
        return {"iss": "https://idp.example", "sub": "x", "preferred_username": self.user} | {
            "nonce": self.nonce
        }


@pytest.fixture
def provider() -> ScriptedProvider:
    return ScriptedProvider()


@pytest.fixture
def sso(tmp_path: Path, clock: FakeClock, provider: ScriptedProvider) -> Iterator[Services]:
    settings = load_settings(
        env={},
        data_dir=tmp_path / "data",
        database_url="memory://",
        public_url="https://push.example",
        oidc_issuer="https://idp.example",
        oidc_client_id="pushcore",
        oidc_client_secret="s3cret",
    )
    built = build_services(
        settings, clock=clock, random=SeededRandom(5), identity_provider=provider
    )
    yield built
    built.close()


# The secret of the one browser these sign-ins run in (as its cookie would hold).
BROWSER = "b" * 43


def oidc(services: Services) -> OidcService:
    assert services.oidc is not None
    return services.oidc


def state_of(departure: Departure) -> str:
    return parse_qs(urlsplit(departure.url).query)["state"][0]


def round_trip(services: Services, clock: FakeClock, away: timedelta = timedelta(0)) -> Arrival:
    departure = asyncio.run(oidc(services).start("/app/", BROWSER))
    clock.advance(away)
    return asyncio.run(oidc(services).finish(state_of(departure), "c", None, departure.verifier))


def failure(services: Services, clock: FakeClock, away: timedelta) -> SignInError:
    with pytest.raises(SignInFailed) as failed:
        round_trip(services, clock, away)
    return failed.value.reason


def has_account(services: Services, account_id: str) -> bool:
    with services.store.read() as tx:
        return tx.accounts.get(account_id) is not None


def test_a_round_trip_has_ten_minutes(sso: Services, clock: FakeClock) -> None:
    assert failure(sso, clock, FLOW_TTL) is SignInError.EXPIRED
    assert not has_account(sso, "Dana")
    arrival = round_trip(sso, clock, FLOW_TTL - timedelta(milliseconds=1))
    assert arrival.account_id == "Dana"
    assert has_account(sso, "Dana")


def test_a_one_time_code_has_a_minute(sso: Services, clock: FakeClock) -> None:
    late = round_trip(sso, clock)
    clock.advance(CODE_TTL)
    with pytest.raises(Unauthorized):
        oidc(sso).exchange(late.code, BROWSER)
    on_time = round_trip(sso, clock)
    clock.advance(CODE_TTL - timedelta(milliseconds=1))
    session = oidc(sso).exchange(on_time.code, BROWSER)
    assert session.account.id == "Dana"
    with pytest.raises(Unauthorized):
        oidc(sso).exchange(on_time.code, BROWSER)


def test_a_round_trip_is_spent_by_its_failure_too(sso: Services) -> None:
    departure = asyncio.run(oidc(sso).start(None, BROWSER))
    state = state_of(departure)
    with pytest.raises(SignInFailed) as declined:
        asyncio.run(oidc(sso).finish(state, None, "access_denied", departure.verifier))
    assert declined.value.reason is SignInError.DENIED
    with pytest.raises(SignInFailed) as again:
        asyncio.run(oidc(sso).finish(state, "c", None, departure.verifier))
    assert again.value.reason is SignInError.STATE


def test_a_provider_that_cannot_be_reached_leaves_nothing_behind(
    sso: Services, provider: ScriptedProvider
) -> None:
    provider.failure = SignInFailed(SignInError.PROVIDER, "discovery")
    with pytest.raises(SignInFailed):
        asyncio.run(oidc(sso).start("/app/", BROWSER))
    with sso.store.transaction() as tx:
        assert tx.sign_ins.delete_expired(sso.clock.now() + timedelta(days=1), 100) == 0


def test_retention_sweeps_what_has_expired(sso: Services, clock: FakeClock) -> None:
    asyncio.run(oidc(sso).start("/app/", BROWSER))  # abandoned at the provider
    round_trip(sso, clock)  # its code never exchanged
    retention = Retention(sso.store, clock, RetentionConfig(keep=timedelta(0)))
    assert retention.sweep() == 0
    clock.advance(FLOW_TTL + timedelta(seconds=1))
    assert retention.sweep() == 2
