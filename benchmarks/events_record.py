"""The engine's own cost of the outbox: CPU ms per event its record transactions write.

    .venv/bin/python -m benchmarks.events_record [--events 5120] [--chunk 128]
        [--runs 3] [--postgres] [--database-url URL]

In this process, on SQLite (or PostgreSQL: a throwaway cluster, or the server of
``--database-url``): one account with one endpoint subscribed to
``notification.*``, as in benchmarks/events_engine.py. Transactions of ``--chunk``
settled notifications (the roll-up's chunk) each write their
``notification.delivered`` events as the engine does (``settled_changes`` and
``record_events``: the events, their ids and data, one attempt each); alternated
with the same transactions writing nothing, whose CPU is taken off. Printed per run:
this process's CPU ms per event (load-robust: CPU time, not wall time), and on
PostgreSQL the server's too. To compare trees, copy this file into the other tree's
benchmarks/ and run it there (``python -m`` puts that tree's pushcore first).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from benchmarks.processes import cpu_seconds, library_settings, postgres
from pushcore import build_services
from pushcore.domain.events import NewWebhook
from pushcore.domain.states import NotificationStatus
from pushcore.events import record_events, settled_changes


@contextlib.contextmanager
def _database(
    use_postgres: bool, url: str | None
) -> Iterator[tuple[str | None, Callable[[], float]]]:
    """The database's URL (None: SQLite) and its server's CPU seconds so far (0 for SQLite)."""
    if not use_postgres:
        yield None, lambda: 0.0
        return
    with postgres(url) as pg:

        def server() -> float:
            total = 0.0
            for pid in pg.server_pids():  # backends come and go
                with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                    total += cpu_seconds(pid)
            return total

        yield pg.fresh(), server


def run(events: int, chunk: int, use_postgres: bool, url: str | None) -> dict[str, float]:
    """One run: CPU ms per event of the writing, in this process and the database's."""
    with tempfile.TemporaryDirectory() as tmp, _database(use_postgres, url) as (db, server):
        services = build_services(library_settings(Path(tmp) / "data", db))
        account = "bench"
        services.webhooks.create(
            account, NewWebhook(url="http://127.0.0.1:9/events", events=("notification.*",))
        )
        store = services.store
        spent = {"events": [0.0, 0.0], "empty": [0.0, 0.0]}  # [this process, server]
        made = 0
        while made < events:
            # Settled notifications as the roll-up has them (the fields it reads).
            settled = [
                cast(
                    Any,
                    SimpleNamespace(
                        id=f"ntf_{made + i:020d}",
                        account_id=account,
                        status=NotificationStatus.DELIVERED,
                        failure_reason=None,
                    ),
                )
                for i in range(chunk)
            ]
            before = {n.id: NotificationStatus.QUEUED for n in settled}
            for label in ("events", "empty"):
                ours, theirs = time.process_time(), server()
                with store.transaction() as tx:
                    tx.webhooks.any()  # a statement either way: a transaction that wrote
                    if label == "events":
                        record_events(tx, settled_changes(before, settled), datetime.now(UTC))
                spent[label][0] += time.process_time() - ours
                spent[label][1] += server() - theirs
            made += chunk
        services.close()
    figures = {"engine CPU ms/event": 1000 * (spent["events"][0] - spent["empty"][0]) / made}
    if use_postgres:
        figures["database CPU ms/event"] = 1000 * (spent["events"][1] - spent["empty"][1]) / made
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=5120)
    parser.add_argument("--chunk", type=int, default=128)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--database-url", help="a PostgreSQL server (implies --postgres)")
    args = parser.parse_args()
    for n in range(args.runs):
        load = os.getloadavg()[0]
        figures = run(args.events, args.chunk, args.postgres or bool(args.database_url),
                      args.database_url)  # fmt: skip
        print(f"run {n + 1} (load {load:.1f}): "
              + ", ".join(f"{k} {v:.3f}" for k, v in figures.items()), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
