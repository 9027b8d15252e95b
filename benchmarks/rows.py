"""Row mapping micro-benchmark: entities encoded into rows and decoded back, in process.

    .venv/bin/python -m benchmarks.rows [--rows 10000] [--runs 7] [--tree DIR]

What the repositories do per row, without a database: a notification as
``Notifications.add`` binds it, a delivery as ``Schedule.add_many`` binds it,
and rows as each driver gives them back decoded (a claim decodes up to 256
deliveries per transaction; a list page, 20 to 100 notifications). On each
dialect's primitives (SQLite: integer milliseconds and JSON text; PostgreSQL:
datetimes and Jsonb). ``--rows`` entities per run, ``--runs`` runs of each;
printed as the best and the median run, in µs per row.

``--tree DIR`` times the pushcore of another source tree (imported from DIR
first), for a before/after comparison on the same machine; trees from before
the row mapping was derived (``records.Rows`` inherited by the dialects) are
timed through their hand-written methods. Printed only: docs/benchmarks.md
("Row mapping") holds the figures with the commands that made them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import timeit
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

Coder = tuple[Callable[[Any], Any], Callable[[Any], Any]]


def sample(count: int) -> tuple[list[Any], list[Any]]:
    """``count`` notifications and as many deliveries, varied as ingest and the engine see them."""
    from pushcore.domain.model import (
        Delivery,
        IconStyle,
        Notification,
        Priority,
        Sound,
        StreamRef,
    )
    from pushcore.domain.states import DeliveryStatus, NotificationStatus

    start = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
    notifications, deliveries = [], []
    for i in range(count):
        at = start + timedelta(milliseconds=i)
        n = Notification(
            id=f"ntf_{i:026d}",
            account_id="acc_bench",
            title="Deploy finished",
            body=f"build {i} is live",
            icon_style=IconStyle.BOLT,
            sound=Sound.DEFAULT,
            priority=Priority.NORMAL,
            delay="1h",
            custom_delay=None,
            target_device_token=None,
            # Every fourth one with metadata, every eighth sent to a stream.
            metadata={"build": str(i)} if i % 4 == 0 else {},
            scheduled_at=at + timedelta(hours=1),
            sender_name=None,
            sender_icon=None,
            status=NotificationStatus.QUEUED,
            created_at=at,
            devices_targeted=1,
            stream=StreamRef("str_bench", "Builds", "ABCD1234") if i % 8 == 0 else None,
        )
        notifications.append(n)
        # As a claim returns them: in flight, leased.
        deliveries.append(
            Delivery(
                id=f"dlv_{i:026d}",
                notification_id=n.id,
                account_id=n.account_id,
                device_id="dev_bench",
                status=DeliveryStatus.IN_FLIGHT,
                due_at=n.scheduled_at,
                attempts=1,
                lease_owner="engine-1",
                lease_expires_at=n.scheduled_at + timedelta(seconds=30),
            )
        )
    return notifications, deliveries


def coders(dialect: Any) -> tuple[Coder, Coder]:
    """(encode, decode) of notifications and of deliveries on ``dialect``, as the tree has them."""
    if hasattr(dialect, "notification_to_row"):
        # A tree from before the derived mapping: the hand-written methods, and what
        # its repositories made of their dicts.
        return (
            (dialect.notification_to_row, dialect.notification_from_row),
            (lambda d: list(dialect.delivery_to_row(d).values()), dialect.delivery_from_row),
        )
    from pushcore.storage.records import DELIVERIES, NOTIFICATIONS

    n, d = NOTIFICATIONS.codec(dialect), DELIVERIES.codec(dialect)
    return (n.encode, n.decode), (d.encode, d.decode)


def as_read(encoded: Any) -> tuple[Any, ...]:
    """A row as the driver gives it back, from what was bound: values in column order,
    a JSON object as psycopg reads jsonb (a dict)."""
    values = encoded.values() if isinstance(encoded, dict) else encoded
    return tuple(getattr(v, "obj", v) for v in values)


def _each(step: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
    return [step(x) for x in items]


def runs(work: Callable[[], object], count: int, repeat: int) -> list[float]:
    """µs per row of ``repeat`` runs of ``work`` (one run handles ``count`` rows)."""
    work()  # the first call compiles, where anything is compiled
    return [t / count * 1e6 for t in timeit.repeat(work, number=1, repeat=repeat)]


def measure(dialect: Any, count: int, repeat: int) -> dict[str, list[float]]:
    """µs per row of each step on ``dialect``."""
    notifications, deliveries = sample(count)
    timings: dict[str, list[float]] = {}
    for entity, items, (encode, decode) in zip(
        ("notification", "delivery"), (notifications, deliveries), coders(dialect), strict=True
    ):
        rows = [as_read(encode(e)) for e in items]
        assert [decode(r) for r in rows] == items, f"{entity}: the round trip changed a value"
        timings[f"{entity} encode"] = runs(partial(_each, encode, items), count, repeat)
        timings[f"{entity} decode"] = runs(partial(_each, decode, rows), count, repeat)
    return timings


def table(results: dict[str, dict[str, list[float]]]) -> str:
    """A Markdown table: best and median µs per row, per dialect and step."""
    lines = ["| dialect | step | best µs/row | median µs/row |", "|---|---|---|---|"]
    for name, timings in results.items():
        for step, values in timings.items():
            lines.append(
                f"| {name} | {step} | {min(values):.2f} | {statistics.median(values):.2f} |"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Time each step and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--tree", type=Path, help="time the pushcore of this source tree")
    args = parser.parse_args(argv)
    if args.tree is not None:
        sys.path.insert(0, str(args.tree.resolve()))
        for name in [m for m in sys.modules if m == "pushcore" or m.startswith("pushcore.")]:
            del sys.modules[name]
    import pushcore
    from pushcore.storage.postgres.dialect import POSTGRES
    from pushcore.storage.sqlite.dialect import SQLITE

    print(f"pushcore from {Path(pushcore.__file__).parent.parent}")
    results = {
        name: measure(dialect, args.rows, args.runs)
        for name, dialect in (("SQLite", SQLITE), ("PostgreSQL", POSTGRES))
    }
    print(table(results))


if __name__ == "__main__":
    main()
