"""pushctl worker: the delivery engine without the HTTP API, for scaled-out deployments."""

from __future__ import annotations

import asyncio
import logging
import signal

import typer

from pushcore.adapters.heap import settle_heap
from pushcore.bootstrap import build_engine
from pushcore.delivery.engine import DeliveryEngine
from pushcore_cli import output
from pushcore_cli.commands import configure_logging, state_of

log = logging.getLogger("pushcore.worker")


def worker(ctx: typer.Context) -> None:
    """Deliver due notifications until stopped (Ctrl-C or SIGTERM), with no HTTP API.

    Several workers (and `pushctl serve` processes) may share one database:
    each claims due deliveries under a lease, so none is sent twice by two
    of them, and a crashed worker's claims come back when the lease ends.

    Example: pushctl worker --data-dir ./data
    """
    state = state_of(ctx)
    settings = state.settings
    configure_logging(settings.log_level)
    services = state.build_services()
    output.say(f"pushcore worker delivering (data directory: {settings.data_dir})")
    try:
        engine = build_engine(services)
        settle_heap()
        asyncio.run(_run(engine))
    finally:
        services.close()


async def _run(engine: DeliveryEngine) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    task = engine.start()
    # Stop on a signal, or if the engine's loop ends by itself (a bug: say so).
    waiter = asyncio.ensure_future(stop.wait())
    await asyncio.wait([task, waiter], return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    if task.done() and task.exception() is not None:
        log.error("delivery engine stopped", exc_info=task.exception())
    await engine.stop()
    await asyncio.gather(task, return_exceptions=True)
    output.say("pushcore worker stopped")
