"""The CPU of the engine's transactions split by step, for ``benchmarks.engine_cpu --split``.

Each function named in ``STEPS`` is wrapped to charge its thread's CPU time
(``time.thread_time``) to its place in a stack of the steps running on that thread:
``roll_up > reconcile > Progress.counts_many`` is the counting done by the reconcile of
a roll-up, apart from ``claim > ... > reconcile``. A step's own part is its time less
its children's (BEGIN, COMMIT and the glue of a transaction show as the outer step's
own). Most wrapped functions run once per batch, a few per delivery (``reconciled``,
``receipt_token``): the wrappers cost about a microsecond a call, under 1% here.
Deterministic profilers (cProfile, yappi) charge each Python call much more than
that, which inflates per-row Python work against the database's C code several
times over; a sampling one (py-spy) cannot tell an idle thread from a busy one in
a native frame. Hence these wrappers.
"""

from __future__ import annotations

import importlib
import threading
import time
from collections import defaultdict
from typing import Any

# module, attribute path, label: patched where they are looked up.
STEPS = (
    ("pushcore.delivery.ledger", "Ledger.claim", "claim"),
    ("pushcore.delivery.ledger", "Ledger._beat", "beat"),
    ("pushcore.delivery.ledger", "Ledger.record", "record"),
    ("pushcore.delivery.ledger", "Ledger.roll_up", "roll_up"),
    ("pushcore.delivery.ledger", "Ledger.roll_up_leftovers", "roll_up_leftovers"),
    ("pushcore.delivery.ledger", "sort_claimed", "sort_claimed (reads)"),
    ("pushcore.delivery.ledger", "write_claimed", "write_claimed"),
    ("pushcore.delivery.ledger", "_next_due", "next_due"),
    ("pushcore.delivery.ledger", "reconcile", "reconcile"),
    ("pushcore.delivery.ledger", "record_events", "record_events"),
    ("pushcore.delivery.ledger", "_withdraw_late", "withdrawals queued"),
    ("pushcore.delivery.claimed", "screen", "screen (quiet hours)"),
    ("pushcore.delivery.claimed", "receipt_token", "receipt_token"),
    ("pushcore.consistency", "reconciled", "reconciled (domain)"),
    ("pushcore.consistency", "record_events", "record_events"),
    ("pushcore.storage.sql.queue", "Queue.claim_due", "Queue.claim_due (mark)"),
    ("pushcore.storage.sql.queue", "Queue.settle_many", "Queue.settle_many"),
    ("pushcore.storage.sql.queue", "Queue.to_roll_up", "Queue.to_roll_up"),
    ("pushcore.storage.sql.queue", "Queue.rolled_up", "Queue.rolled_up"),
    ("pushcore.storage.sql.notifications", "Notifications.by_ids", "Notifications.by_ids"),
    ("pushcore.storage.sql.notifications", "Notifications.refresh", "Notifications.refresh"),
    ("pushcore.storage.sql.notifications", "Notifications.update_many", "update_many"),
    ("pushcore.storage.sql.notifications", "Notifications._count_changes", "count_changes"),
    ("pushcore.storage.sql.notifications", "Notifications.due_wakeups", "due_wakeups"),
    ("pushcore.storage.sql.transaction", "Locks.notifications", "Locks.notifications"),
    ("pushcore.storage.sql.notifications", "Progress.counts_many", "Progress.counts_many"),
    ("pushcore.storage.sql.notifications", "Progress.open_among", "Progress.open_among"),
    ("pushcore.storage.sql.accounts", "Devices.by_ids", "Devices.by_ids"),
    ("pushcore.storage.sql.accounts", "Devices.mark_delivered", "Devices.mark_delivered"),
)


class Split:
    """CPU seconds by stack of steps, over every thread."""

    def __init__(self) -> None:
        self.spent: dict[tuple[str, ...], float] = defaultdict(float)
        self.calls: dict[tuple[str, ...], int] = defaultdict(int)
        self._local = threading.local()

    def install(self) -> None:
        """Wrap every step that exists in this tree (an older one may lack some)."""
        for module_name, path, label in STEPS:
            owner: Any = importlib.import_module(module_name)
            *parents, name = path.split(".")
            for parent in parents:
                owner = getattr(owner, parent, None)
            original = getattr(owner, name, None)
            if original is not None:
                setattr(owner, name, self._wrap(original, label))

    def _wrap(self, fn: Any, label: str) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            stack: list[str] = getattr(self._local, "stack", None) or []
            self._local.stack = stack
            stack.append(label)
            key = tuple(stack)
            begin = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.spent[key] += time.thread_time() - begin
                self.calls[key] += 1
                stack.pop()

        return wrapper

    def report(self, count: int, total_cpu: float) -> str:
        """Lines: each stack's CPU ms a delivery, its own part apart from its children's."""
        lines = []
        for key in sorted(self.spent):
            children = sum(
                v for k, v in self.spent.items() if len(k) == len(key) + 1 and k[:-1] == key
            )
            whole, own = self.spent[key], self.spent[key] - children
            lines.append(
                f"{'  ' * (len(key) - 1)}{key[-1]}: {whole / count * 1000:.4f} ms"
                f" (own {own / count * 1000:.4f}; {self.calls[key]} calls)"
            )
        threads = sum(v for k, v in self.spent.items() if len(k) == 1)
        lines.append(
            f"the event loop's thread and the rest: {(total_cpu - threads) / count * 1000:.4f} ms"
        )
        return "\n".join(lines)
