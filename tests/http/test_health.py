"""Liveness and readiness."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from pushcore import Services, build_services, load_settings
from pushcore_http import create_app


def test_healthz(client: TestClient) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_reports_database_and_scheduler(client: TestClient) -> None:
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {
        "status": "ready",
        "checks": {"database": "ok", "scheduler": "running"},
    }


def test_readyz_is_503_when_the_database_is_gone(client: TestClient, services: Services) -> None:
    def broken() -> None:
        raise OSError("database unreachable")

    object.__setattr__(services.store, "ping", broken)
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {
        "status": "unavailable",
        "checks": {"database": "down", "scheduler": "running"},
    }


@pytest.fixture
def api_only(tmp_path: Path) -> Iterator[TestClient]:
    services = build_services(load_settings(env={}, data_dir=tmp_path))
    with TestClient(create_app(services, run_engine=False)) as client:
        yield client


def test_an_api_only_process_is_ready_without_a_scheduler(api_only: TestClient) -> None:
    assert api_only.get("/readyz").json() == {"status": "ready", "checks": {"database": "ok"}}


def test_readyz_is_503_when_the_scheduler_stopped(client: TestClient) -> None:
    engine = client.app.state.engine  # type: ignore[attr-defined]
    engine.running = False
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["scheduler"] == "stopped"
    engine.running = True
