"""Liveness and readiness."""

from __future__ import annotations

from starlette.testclient import TestClient

from pushcore import Services


def test_healthz(client: TestClient) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_reports_the_database(client: TestClient, services: Services) -> None:
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {"status": "ready", "checks": {"database": "ok"}}


def test_readyz_is_503_when_the_database_is_gone(client: TestClient, services: Services) -> None:
    def broken() -> None:
        raise OSError("database unreachable")

    object.__setattr__(services.store, "ping", broken)
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "checks": {"database": "down"}}
