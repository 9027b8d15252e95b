"""API keys are authenticated from a small cache: revocation and expiry still hold.

Revoked in this process: refused at once. Revoked by another process (here a
second set of services on the same database, as `pushctl keys revoke` is):
refused within 1 s. Expired: refused at once, cached or not (test_keys.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from pushcore import Services, build_services, load_settings
from pushcore.domain.errors import Unauthorized
from pushcore_http import create_app
from tests.conftest import Api
from tests.fakes.clock import FakeClock


@pytest.fixture
def clocked(tmp_path: Path, fake_clock: FakeClock) -> Iterator[tuple[Api, FakeClock]]:
    """An API on services whose clock the test moves."""
    services = build_services(load_settings(env={}, data_dir=tmp_path / "d"), clock=fake_clock)
    with TestClient(create_app(services, run_engine=False)) as client:
        yield Api(client, services), fake_clock
    services.close()


@pytest.fixture
def other_process(clocked: tuple[Api, FakeClock]) -> Iterator[Services]:
    """Services of their own on the same database: what another process would hold."""
    api, clock = clocked
    services = build_services(api.services.settings, clock=clock)
    yield services
    services.close()


def key_id(api: Api) -> str:
    found: str = api.client.get("/api/keys", headers=api.token("alice")).json()[0]["id"]
    return found


def test_a_key_revoked_in_this_process_is_refused_at_once(
    clocked: tuple[Api, FakeClock],
) -> None:
    api, _clock = clocked
    headers = api.key("alice", "devices:read")
    assert api.client.get("/api/devices", headers=headers).status_code == 200  # now cached
    revoked = api.client.delete(f"/api/keys/{key_id(api)}", headers=api.token("alice"))
    assert revoked.status_code == 200
    response = api.client.get("/api/devices", headers=headers)
    assert response.status_code == 401
    assert response.json() == {"error": "API key revoked", "code": "unauthorized"}


def test_a_key_revoked_by_another_process_is_refused_within_a_second(
    clocked: tuple[Api, FakeClock], other_process: Services
) -> None:
    api, clock = clocked
    headers = api.key("alice", "devices:read")
    assert api.client.get("/api/devices", headers=headers).status_code == 200
    other_process.keys.revoke("alice", key_id(api))
    # Within the second the entry answers for the key (the documented window) ...
    clock.advance(0.5)
    assert api.client.get("/api/devices", headers=headers).status_code == 200
    # ... and once it has passed, the store does.
    clock.advance(0.5)
    response = api.client.get("/api/devices", headers=headers)
    assert response.status_code == 401
    assert response.json()["error"] == "API key revoked"


def test_a_hit_needs_no_store_and_a_miss_goes_to_it(clocked: tuple[Api, FakeClock]) -> None:
    api, clock = clocked
    key = api.key("alice", "devices:read")["X-API-Key"]
    auth = api.services.auth
    assert auth.cached_key(key) is None  # created, never used: not cached
    assert auth.authenticate_key(key).account_id == "alice"
    cached = auth.cached_key(key)
    assert cached is not None
    assert cached.account_id == "alice"
    clock.advance(1)
    assert auth.cached_key(key) is None


def test_unknown_and_malformed_keys_are_refused_and_not_cached(
    clocked: tuple[Api, FakeClock],
) -> None:
    api, _clock = clocked
    auth = api.services.auth
    made_up = "psk_abcdefghijklmnopqrstuvwxyzABCDEF1mVgZW"  # well formed, never issued
    with pytest.raises(Unauthorized, match="Invalid API key"):
        auth.cached_key("psk_nope")
    with pytest.raises(Unauthorized, match="Invalid API key"):
        auth.authenticate_key("psk_nope")
    assert auth.cached_key(made_up) is None
    with pytest.raises(Unauthorized, match="Invalid API key"):
        auth.authenticate_key(made_up)
    assert auth.cached_key(made_up) is None  # the store said no: nothing kept
