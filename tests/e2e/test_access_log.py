"""PUSHCORE_ACCESS_LOG: no line per request by default, uvicorn's access log when true."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.server import Server

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("setting", "logged"), [(None, False), ("true", True)])
def test_the_access_log_is_off_unless_asked_for(
    tmp_path: Path, setting: str | None, *, logged: bool
) -> None:
    env = {"PUSHCORE_LOG_LEVEL": "info"}
    if setting is not None:
        env["PUSHCORE_ACCESS_LOG"] = setting
    server = Server(tmp_path / "data", env=env)
    server.start()
    try:
        assert server.request("GET", "/openapi.json").status_code == 200
    finally:
        server.stop()
    log = server.log.read_text()
    assert "Application startup complete" in log  # info lines are there either way
    assert ('"GET /openapi.json HTTP/1.1" 200' in log) is logged
