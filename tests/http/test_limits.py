"""Rate limits over HTTP: per-account token buckets, failed authentications per address.

The buckets refill continuously (1 token a second in these tests), so each
test sends many more requests than its bucket holds: a refill or two during a
test cannot change what it asserts.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import throttled.utils
from starlette.testclient import TestClient

from pushcore import build_services, load_settings
from pushcore.domain.errors import ConfigError
from pushcore_http import create_app, ratelimit
from pushcore_http.ratelimit import client_key
from tests.conftest import Api

BURST = 5


MakeApi = Callable[..., Api]


@pytest.fixture(autouse=True)
def no_refusal_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    """Early refusals answer at once here (one test below puts the delay back)."""
    monkeypatch.setattr(ratelimit, "REFUSAL_DELAY", 0.0)


@pytest.fixture(autouse=True)
def buckets_on_still_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The buckets refill with time (throttled-py reads time.monotonic): hold it still,
    so that what a test counts does not depend on how fast this machine runs it."""
    monkeypatch.setattr(throttled.utils, "now_mono_f", lambda: 1_000_000.0)


@pytest.fixture
def make_api(tmp_path: Path) -> Iterator[MakeApi]:
    """API-only apps with the given settings (the defaults when none), closed after the test."""
    with ExitStack() as stack:

        def make(**settings: Any) -> Api:
            loaded = load_settings(env={}, data_dir=tmp_path / "data", **settings)
            services = build_services(loaded)
            stack.callback(services.close)
            app = create_app(services, run_engine=False)
            client = stack.enter_context(TestClient(app, raise_server_exceptions=False))
            return Api(client, services)

        yield make


@pytest.fixture
def api(make_api: MakeApi) -> Api:
    """1 request a second per account, bursts of 5."""
    return make_api(rate_limit=1, rate_limit_burst=BURST)


@pytest.fixture
def unlimited(make_api: MakeApi) -> Api:
    """Rate limiting off."""
    return make_api(rate_limit=0, rate_limit_burst=1)


def statuses(
    api: Api, headers: dict[str, str], count: int, path: str = "/api/devices"
) -> list[int]:
    """The statuses of ``count`` GETs of ``path``."""
    return [api.client.get(path, headers=headers).status_code for _ in range(count)]


def test_an_account_over_its_burst_gets_429_with_retry_after(api: Api) -> None:
    headers = api.token("alice")
    codes = statuses(api, headers, BURST)
    assert codes == [200] * BURST

    refused = [api.client.get("/api/devices", headers=headers) for _ in range(10)]

    assert sum(r.status_code == 429 for r in refused) >= 7
    answer = next(r for r in refused if r.status_code == 429)
    assert answer.json()["code"] == "rate_limited"
    assert answer.json()["error"].startswith("Rate limit exceeded")
    retry_after = answer.headers["Retry-After"]
    assert retry_after.isdigit()
    assert int(retry_after) >= 1


def test_another_account_is_not_limited_by_the_first(api: Api) -> None:
    alice = api.token("alice")
    statuses(api, alice, 3 * BURST)

    assert statuses(api, api.token("bob"), BURST) == [200] * BURST


def test_keys_and_tokens_of_one_account_share_its_bucket(api: Api) -> None:
    key = api.key("alice", "devices:read")  # one request (with a token) of the burst
    assert statuses(api, key, BURST - 1) == [200] * (BURST - 1)

    assert 429 in statuses(api, api.token("alice"), 5)


def test_a_refused_request_is_not_authenticated_again(api: Api, monkeypatch: Any) -> None:
    key = api.key("alice", "devices:read")
    statuses(api, key, BURST)
    calls: list[str] = []
    original = api.services.auth.authenticate_key

    def counting(presented: str) -> Any:
        calls.append(presented)
        return original(presented)

    monkeypatch.setattr(api.services.auth, "authenticate_key", counting)
    codes = statuses(api, key, 20)

    assert codes.count(429) >= 17
    # Only the requests that found a token (a refill or two) were authenticated.
    assert len(calls) <= 20 - codes.count(429) + 1


def test_a_request_refused_early_waits_before_its_answer(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    headers = api.token("alice")
    statuses(api, headers, 3 * BURST)
    monkeypatch.setattr(ratelimit, "REFUSAL_DELAY", 0.3)

    started = time.monotonic()
    answer = api.client.get("/api/devices", headers=headers)

    assert answer.status_code == 429
    # Held for 0.3 s give or take half of it (spread: see ratelimit.refusal_delay).
    assert time.monotonic() - started >= 0.15


def test_early_refusals_are_held_for_different_times_around_the_delay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Not in step: a client's connections held alike would all come back at once."""
    monkeypatch.setattr(ratelimit, "REFUSAL_DELAY", 0.5)
    delays = [ratelimit.refusal_delay() for _ in range(200)]

    assert all(0.25 <= d <= 0.75 for d in delays)
    assert max(delays) - min(delays) > 0.25
    assert abs(statistics.mean(delays) - 0.5) < 0.05


def test_unauthenticated_endpoints_are_not_limited(api: Api) -> None:
    assert statuses(api, {}, 3 * BURST, "/healthz") == [200] * (3 * BURST)


def test_limit_zero_turns_limiting_off(unlimited: Api) -> None:
    headers = unlimited.token("alice")

    assert set(statuses(unlimited, headers, 30)) == {200}


def test_limit_zero_turns_failed_authentication_limits_off(unlimited: Api) -> None:
    bad = {"X-API-Key": "psk_nope"}

    assert set(statuses(unlimited, bad, 80)) == {401}


# -- failed authentications per client address ------------------------------------


def test_failed_authentications_are_limited_per_address(make_api: MakeApi) -> None:
    # The default limits: the address bucket is API.md's 10/s, burst 50.
    api = make_api()
    bad = {"X-API-Key": "psk_" + "a" * 38}

    codes = statuses(api, bad, 80)

    assert codes == [401] * 50 + [429] * 30
    answer = api.client.get("/api/devices", headers=bad)
    assert answer.status_code == 429
    assert answer.json()["error"] == "Too many failed authentications from this address"
    assert int(answer.headers["Retry-After"]) >= 1


def test_a_known_credential_from_a_blocked_address_still_works(make_api: MakeApi) -> None:
    api = make_api()
    good = api.token("alice")
    assert api.client.get("/api/devices", headers=good).status_code == 200
    statuses(api, {"Authorization": "Bearer nonsense"}, 60)
    assert api.client.get("/api/devices", headers={"X-API-Key": "psk_x"}).status_code == 429

    assert api.client.get("/api/devices", headers=good).status_code == 200


def test_missing_credentials_count_as_failures(make_api: MakeApi) -> None:
    api = make_api()
    assert set(statuses(api, {}, 55)) == {401}  # nothing to refuse early: still cheap

    assert api.client.get("/api/devices", headers={"X-API-Key": "psk_x"}).status_code == 429


def test_ipv6_clients_are_grouped_by_their_64() -> None:
    def key(host: str) -> str:
        return client_key({"type": "http", "client": (host, 1234)})

    assert key("2001:db8:1:2::1") == key("2001:db8:1:2:ffff::9") == "2001:db8:1:2::/64"
    assert key("2001:db8:1:3::1") != key("2001:db8:1:2::1")
    assert key("203.0.113.7") == "203.0.113.7"
    assert client_key({"type": "http", "client": None}) == "unknown"


# -- settings -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"rate_limit": -1}, "PUSHCORE_RATE_LIMIT"),
        ({"rate_limit_burst": 0}, "PUSHCORE_RATE_LIMIT_BURST"),
        ({"icon_checks": 0}, "PUSHCORE_ICON_CHECKS"),
        ({"icon_checks": 4, "icon_checks_per_account": 5}, "PUSHCORE_ICON_CHECKS_PER_ACCOUNT"),
    ],
)
def test_invalid_limit_settings_name_the_setting(
    tmp_path: Path, settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        load_settings(env={}, data_dir=tmp_path, **settings)


def test_limits_come_from_the_environment(tmp_path: Path) -> None:
    settings = load_settings(
        env={"PUSHCORE_RATE_LIMIT": "0", "PUSHCORE_RATE_LIMIT_BURST": "7"}, data_dir=tmp_path
    )

    assert (settings.rate_limit, settings.rate_limit_burst) == (0, 7)
    assert load_settings(env={}, data_dir=tmp_path).rate_limit == 100
