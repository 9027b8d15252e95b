"""GET /metrics: the Prometheus scrape an operator relies on."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from pushcore import Services, build_services, load_settings
from pushcore_http import create_app
from tests.conftest import Api
from tests.fakes.clock import FakeClock
from tests.fakes.receiver import Receiver, running_receiver


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """Every sample of a scrape by (name, labels)."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(text: str, name: str, **labels: str) -> float | None:
    """One sample's value, or None when the scrape does not have it."""
    return samples(text).get((name, frozenset(labels.items())))


def label_values(text: str, name: str, label: str) -> set[str]:
    """The values ``label`` takes in the samples called ``name``."""
    return {dict(labels)[label] for (n, labels) in samples(text) if n == name}


def scrape(client: TestClient) -> str:
    response = client.get("/metrics")
    assert response.status_code == 200
    text: str = response.text
    return text


def test_metrics_needs_no_credentials_and_speaks_prometheus_text(client: TestClient) -> None:
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = response.text
    assert value(text, "pushcore_build_info", version="0.1.0") == 1.0
    assert value(text, "pushcore_database_up") == 1.0
    # The process collector of the app's own registry (Linux has /proc).
    assert value(text, "process_resident_memory_bytes") is not None


def test_openmetrics_when_the_scraper_asks_for_it(client: TestClient) -> None:
    response = client.get("/metrics", headers={"Accept": "application/openmetrics-text"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/openmetrics-text")
    assert response.text.endswith("# EOF\n")


def test_requests_are_counted_by_route_template_not_raw_path(client: TestClient) -> None:
    for device_id in ("dev_one", "dev_two", "dev_three"):
        assert client.delete(f"/api/devices/{device_id}").status_code == 401
    text = scrape(client)
    labels = {"method": "DELETE", "route": "/api/devices/{device_id}", "status": "401"}
    assert value(text, "pushcore_http_requests_total", **labels) == 3.0
    histogram = {"method": "DELETE", "route": "/api/devices/{device_id}"}
    assert value(text, "pushcore_http_request_duration_seconds_count", **histogram) == 3.0
    assert "dev_one" not in text


def test_unknown_paths_share_one_label_value(client: TestClient) -> None:
    for path in ("/wp-login.php", "/api/nothing/here", "/.env", "/api/devices/x/y"):
        assert client.get(path).status_code == 404
    scrape(client)
    text = scrape(client)
    routes = label_values(text, "pushcore_http_requests_total", "route")
    assert routes == {"<unmatched>", "/metrics"}
    unmatched = {"method": "GET", "route": "<unmatched>", "status": "404"}
    assert value(text, "pushcore_http_requests_total", **unmatched) == 4.0
    assert "wp-login" not in text


def test_unknown_methods_share_one_label_value(client: TestClient) -> None:
    assert client.request("BREW", "/healthz").status_code == 405
    assert client.request("PROPFIND", "/healthz").status_code == 405
    text = scrape(client)
    assert label_values(text, "pushcore_http_requests_total", "method") >= {"OTHER"}
    assert "BREW" not in text
    labels = {"method": "OTHER", "route": "/healthz", "status": "405"}
    assert value(text, "pushcore_http_requests_total", **labels) == 2.0


def test_an_unexpected_error_is_counted_as_a_500(
    client: TestClient, api: Api, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(account_id: str) -> Any:
        raise RuntimeError("a bug")

    headers = api.token("alice")
    monkeypatch.setattr(services.devices, "list", broken)
    assert client.get("/api/devices", headers=headers).status_code == 500
    labels = {"method": "GET", "route": "/api/devices", "status": "500"}
    assert value(scrape(client), "pushcore_http_requests_total", **labels) == 1.0


def test_every_platform_and_outcome_is_reported_from_the_start(client: TestClient) -> None:
    text = scrape(client)
    for platform in ("ios", "android", "web", "webhook"):
        for outcome in ("delivered", "retry", "token_invalid", "failed"):
            labels = {"platform": platform, "outcome": outcome}
            assert value(text, "pushcore_deliveries_total", **labels) == 0.0


def test_two_apps_in_one_process_count_separately(tmp_path: Path) -> None:
    first = build_services(load_settings(env={}, data_dir=tmp_path / "one"))
    second = build_services(load_settings(env={}, data_dir=tmp_path / "two"))
    with (
        TestClient(create_app(first, run_engine=False)) as one,
        TestClient(create_app(second, run_engine=False)) as two,
    ):
        for _ in range(3):
            one.get("/healthz")
        labels = {"method": "GET", "route": "/healthz", "status": "200"}
        assert value(scrape(one), "pushcore_http_requests_total", **labels) == 3.0
        assert value(scrape(two), "pushcore_http_requests_total", **labels) is None


# -- the queue, read from the database when scraped ------------------------------


@pytest.fixture
def queue_api(tmp_path: Path, fake_clock: FakeClock) -> Iterator[Api]:
    """An API-only app on a fake clock: nothing is claimed, the queue stays as made."""
    services = build_services(load_settings(env={}, data_dir=tmp_path), clock=fake_clock)
    with TestClient(create_app(services, run_engine=False)) as client:
        yield Api(client, services)


def test_queue_gauges_follow_the_database(queue_api: Api, fake_clock: FakeClock) -> None:
    key = queue_api.key("alice")
    for token in ("t1", "t2"):
        device = {"platform": "android", "token": token}
        assert queue_api.client.post("/api/devices", json=device, headers=key).status_code == 201
    for delay in ("5s", "1m"):
        body = {"title": "hi", "delay": delay}
        created = queue_api.client.post("/api/notifications", json=body, headers=key)
        assert created.status_code == 201

    text = scrape(queue_api.client)
    assert value(text, "pushcore_queue_pending_deliveries") == 4.0
    assert value(text, "pushcore_queue_due_deliveries") == 0.0
    assert value(text, "pushcore_queue_in_flight_deliveries") == 0.0
    assert value(text, "pushcore_queue_oldest_due_age_seconds") == 0.0

    # 30 s later the 5 s ones have waited 25 s for a scheduler (none runs here).
    fake_clock.advance(timedelta(seconds=30))
    text = scrape(queue_api.client)
    assert value(text, "pushcore_queue_pending_deliveries") == 4.0
    assert value(text, "pushcore_queue_due_deliveries") == 2.0
    assert value(text, "pushcore_queue_oldest_due_age_seconds") == 25.0


def test_a_database_failure_still_answers_the_scrape(
    queue_api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unreachable() -> Any:
        raise OSError("database unreachable")

    queue_api.client.get("/healthz")
    monkeypatch.setattr(queue_api.services.store, "read", unreachable)
    text = scrape(queue_api.client)
    assert value(text, "pushcore_database_up") == 0.0
    assert value(text, "pushcore_queue_pending_deliveries") is None
    labels = {"method": "GET", "route": "/healthz", "status": "200"}
    assert value(text, "pushcore_http_requests_total", **labels) == 1.0


# -- deliveries, through the engine the app runs ------------------------------------


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as r:
        yield r


@pytest.fixture
def live_api(tmp_path: Path) -> Iterator[Api]:
    """The app with its own engine, allowed to deliver to webhooks on loopback."""
    settings = load_settings(env={"PUSHCORE_ALLOW_PRIVATE_NETWORKS": "true"}, data_dir=tmp_path)
    services = build_services(settings)
    with TestClient(create_app(services)) as client:
        yield Api(client, services)


def test_deliveries_are_counted_by_platform_and_outcome(live_api: Api, receiver: Receiver) -> None:
    key = live_api.key("alice")
    for path in ("/ok", "/gone"):
        device = {"platform": "webhook", "token": receiver.url(path)}
        assert live_api.client.post("/api/devices", json=device, headers=key).status_code == 201
    receiver.answer("/gone", 410)
    body = {"title": "hi", "scheduledAt": "2000-01-01T00:00:00Z"}
    created = live_api.client.post("/api/notifications", json=body, headers=key).json()

    def settled() -> bool:
        found = live_api.client.get(f"/api/notifications/{created['id']}", headers=key).json()
        return bool(found["deliveries"]["pending"] == 0)

    deadline = time.monotonic() + 15
    while not settled():
        assert time.monotonic() < deadline, "the deliveries did not settle"
        time.sleep(0.02)
    text = scrape(live_api.client)
    webhook = {"platform": "webhook"}
    assert value(text, "pushcore_deliveries_total", **webhook, outcome="delivered") == 1.0
    assert value(text, "pushcore_deliveries_total", **webhook, outcome="token_invalid") == 1.0
    assert value(text, "pushcore_deliveries_total", **webhook, outcome="failed") == 0.0
    assert value(text, "pushcore_deliveries_total", platform="ios", outcome="delivered") == 0.0
    sends = value(text, "pushcore_gateway_send_duration_seconds_count", **webhook)
    assert sends is not None
    assert sends >= 1.0
    # The app's own engine: nothing left in flight, nothing sent twice.
    assert value(text, "pushcore_engine_in_flight_deliveries") == 0.0
    assert value(text, "pushcore_redeliveries_total") == 0.0
