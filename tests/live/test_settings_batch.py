"""A stream send's live events: the subscribers' settings, read together, each still its own."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pushcore import build_services, load_settings
from pushcore.domain.model import Priority
from pushcore.domain.recipient import RecipientSettings, SettingsPatch
from pushcore.services import Services
from pushcore_http.live_settings import SettingsBatch


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    """Services on a fresh SQLite database."""
    built = build_services(load_settings(env={}, data_dir=tmp_path))
    try:
        yield built
    finally:
        built.close()


def test_channels_woken_together_share_one_read_and_each_gets_its_own_settings(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    recipients = services.recipients
    snoozed = (datetime.now(UTC) + timedelta(hours=1)).replace(microsecond=0)
    recipients.update("snoozer", SettingsPatch(frozenset({"snooze_until"}), snooze_until=snoozed))
    recipients._cache.clear()  # as a second later: nothing remembered
    reads: list[Sequence[str]] = []
    read = recipients.settings_of

    def counted(account_ids: Sequence[str]) -> dict[str, RecipientSettings]:
        reads.append(list(account_ids))
        return read(account_ids)

    monkeypatch.setattr(recipients, "settings_of", counted)
    batch = SettingsBatch(recipients)
    accounts = ["snoozer", *(f"acct{i}" for i in range(50))]

    async def woken_together() -> list[RecipientSettings]:
        return await asyncio.gather(*(batch.of(a) for a in accounts))

    found = asyncio.run(woken_together())
    now = datetime.now(UTC)
    assert [s.is_quiet(now, Priority.NORMAL) for s in found] == [True] + [False] * 50
    assert found[0].snooze_until == snoozed
    assert reads == [sorted(accounts)]
    # Read within the cache's second: remembered, no read again.
    assert asyncio.run(batch.of("acct7")) == found[8]
    assert len(reads) == 1
