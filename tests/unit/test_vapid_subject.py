"""PUSHCORE_VAPID_SUBJECT defaults to an https PUSHCORE_PUBLIC_URL (issue 31, point 4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pushcore import load_settings
from pushcore.bootstrap import build_gateways
from pushcore.domain.model import Platform
from pushcore.gateways.webpush import WebPushGateway
from pushcore.runtime.system import SystemClock


def _subject(tmp_path: Path, **env: str) -> str | None:
    values = {"PUSHCORE_DATA_DIR": str(tmp_path)} | {f"PUSHCORE_{k}": v for k, v in env.items()}
    return load_settings(env=values).vapid_subject


def test_an_https_public_url_is_the_subject(tmp_path: Path) -> None:
    assert _subject(tmp_path, PUBLIC_URL="https://push.example/base/") == (
        "https://push.example/base"
    )


@pytest.mark.parametrize("public", ["http://push.example", ""])
def test_no_subject_without_an_https_public_url(tmp_path: Path, public: str) -> None:
    env = {"PUBLIC_URL": public} if public else {}
    assert _subject(tmp_path, **env) is None


def test_a_subject_set_wins(tmp_path: Path) -> None:
    subject = _subject(tmp_path, PUBLIC_URL="https://push.example", VAPID_SUBJECT="mailto:a@b.c")
    assert subject == "mailto:a@b.c"


def test_web_push_is_on_with_the_public_url_alone(tmp_path: Path) -> None:
    settings = load_settings(
        env={"PUSHCORE_DATA_DIR": str(tmp_path), "PUSHCORE_PUBLIC_URL": "https://push.example"}
    )
    assert isinstance(build_gateways(settings, SystemClock())[Platform.WEB], WebPushGateway)
