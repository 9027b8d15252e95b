"""pushctl gateways check: configured or not, and whether the credentials load and sign."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from tests.cli.conftest import Cli
from tests.fakes.fcm_server import make_service_account


def p8(path: Path) -> Path:
    path.write_bytes(
        ec.generate_private_key(ec.SECP256R1()).private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return path


def test_nothing_configured_is_not_an_error(cli: Cli) -> None:
    result = cli("gateways check --json")
    assert result.exit_code == 0, result.output
    rows = {r["platform"]: r for r in json.loads(result.stdout)}
    assert rows["ios"]["configured"] is False
    assert rows["android"]["configured"] is False
    assert rows["web"]["configured"] is False
    assert rows["webhook"] == {
        "platform": "webhook",
        "configured": True,
        "ok": True,
        "detail": "ready (needs no credentials)",
    }


def test_working_credentials_are_ready(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    account = tmp_path / "service-account.json"
    account.write_text(json.dumps(make_service_account("https://oauth2.example.com/token")))
    for name, value in {
        "PUSHCORE_APNS_KEY_FILE": str(p8(tmp_path / "AuthKey.p8")),
        "PUSHCORE_APNS_KEY_ID": "KEY1234567",
        "PUSHCORE_APNS_TEAM_ID": "TEAM123456",
        "PUSHCORE_APNS_TOPIC": "com.example.app",
        "PUSHCORE_FCM_SERVICE_ACCOUNT_FILE": str(account),
        "PUSHCORE_VAPID_SUBJECT": "mailto:ops@example.com",
    }.items():
        monkeypatch.setenv(name, value)
    result = cli("gateways check --json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [(r["platform"], r["configured"], r["ok"]) for r in rows] == [
        ("ios", True, True),
        ("android", True, True),
        ("web", True, True),
        ("webhook", True, True),
    ]
    people = cli("gateways check")
    assert people.exit_code == 0
    assert "ios      ready" in people.stdout


def test_a_broken_key_is_reported_and_exits_1(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "AuthKey.p8"
    broken.write_text("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n")
    monkeypatch.setenv("PUSHCORE_APNS_KEY_FILE", str(broken))
    monkeypatch.setenv("PUSHCORE_APNS_KEY_ID", "KEY1234567")
    monkeypatch.setenv("PUSHCORE_APNS_TEAM_ID", "TEAM123456")
    monkeypatch.setenv("PUSHCORE_APNS_TOPIC", "com.example.app")
    result = cli("gateways check --json")
    assert result.exit_code == 1
    (ios,) = [r for r in json.loads(result.stdout) if r["platform"] == "ios"]
    assert ios["configured"] is True
    assert ios["ok"] is False
    assert ios["detail"]
