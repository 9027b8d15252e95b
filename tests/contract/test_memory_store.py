"""``memory://``: SQLite in a private temporary directory, gone when the store closes."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from pushcore.domain.model import Plan
from pushcore.storage import open_store
from tests.contract.test_store_contract import T0


def test_memory_stores_keep_nothing_and_share_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    first, second = open_store("memory://"), open_store("memory://")
    try:
        assert len(list(tmp_path.iterdir())) == 2
        with first.transaction() as tx:
            tx.accounts.set_plan("acc_a", Plan.PRO, T0)
        with first.read() as tx:
            stored = tx.accounts.get("acc_a")
        assert stored is not None
        assert stored.plan is Plan.PRO
        with second.read() as tx:
            assert tx.accounts.get("acc_a") is None
    finally:
        first.close()
        second.close()
    assert list(tmp_path.iterdir()) == []
