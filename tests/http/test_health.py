"""Liveness and readiness."""

from __future__ import annotations

import sqlite3
import threading
import time
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


def test_readyz_answers_within_a_second_while_the_database_hangs_and_pings_once(
    client: TestClient, services: Services
) -> None:
    release = threading.Event()
    ended = threading.Event()
    calls: list[float] = []

    def hanging() -> None:
        calls.append(time.monotonic())
        release.wait(10)
        ended.set()

    object.__setattr__(services.store, "ping", hanging)
    try:
        for _ in range(3):
            started = time.monotonic()
            response = client.get("/readyz")
            assert time.monotonic() - started < 1.0
            assert response.status_code == 503
            assert response.json()["checks"]["database"] == "down"
        # A ping still running is waited for again, not started anew.
        assert len(calls) == 1
    finally:
        release.set()
    # Once it ended (well), the next call pings afresh. A call made while it was
    # still ending would rightly take its answer instead: wait until it has.
    assert ended.wait(5)
    time.sleep(0.1)
    deadline = time.monotonic() + 5
    while client.get("/readyz").status_code != 200:
        assert time.monotonic() < deadline
    assert len(calls) == 2


def test_readyz_writes_so_a_database_that_cannot_write_is_not_ready(
    client: TestClient, services: Services
) -> None:
    database = services.settings.data_dir / "pushcore.db"
    holder = sqlite3.connect(database, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another program holds the write lock
    try:
        started = time.monotonic()
        response = client.get("/readyz")
        assert time.monotonic() - started < 1.0
        assert response.status_code == 503
    finally:
        holder.execute("ROLLBACK")
        holder.close()
