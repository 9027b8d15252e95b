"""Races for the contract tests: work started in several threads at the same instant."""

from __future__ import annotations

import threading
from collections.abc import Callable


def race(count: int, work: Callable[[int], None]) -> None:
    """Run ``work(i)`` in ``count`` threads released together; re-raise the first error."""
    barrier = threading.Barrier(count)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait()
            work(i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
