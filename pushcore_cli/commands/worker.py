"""pushctl worker: the delivery engine without the HTTP API, for scaled-out deployments."""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import TYPE_CHECKING, Annotated

import typer

from pushcore.runtime.heap import settle_heap
from pushcore_cli import output
from pushcore_cli.commands import CliState, configure_logging, state_of
from pushcore_cli.commands.serve import listen, url

if TYPE_CHECKING:
    from pushcore.delivery.engine import DeliveryEngine

log = logging.getLogger("pushcore.worker")


def worker(
    ctx: typer.Context,
    host: Annotated[
        str, typer.Option("--host", help="With --port: the address to serve health on.")
    ] = "127.0.0.1",
    port: Annotated[
        int | None,
        typer.Option(
            "--port",
            min=0,
            max=65535,
            help="Serve /healthz, /readyz and /metrics on this port (default: none).",
        ),
    ] = None,
) -> None:
    """Deliver due notifications until stopped (Ctrl-C or SIGTERM), with no HTTP API.

    Several workers (and `pushctl serve` processes) may share one database:
    each claims due deliveries under a lease, so none is sent twice by two
    of them, and a crashed worker's claims come back when the lease ends.
    With --port, it serves /healthz, /readyz and /metrics (its deliveries,
    gateways and queue) on that port, and nothing else.

    Example: pushctl worker --data-dir ./data --port 9100
    """
    state = state_of(ctx)
    settings = state.settings
    configure_logging(settings.log_level)
    if port is not None:
        _serve_with_health(state, host, port)
        return
    services = state.build_services(server=True)
    output.say(f"pushcore worker delivering (data directory: {settings.data_dir})")
    try:
        from pushcore.bootstrap import build_engine

        engine = build_engine(services)
        settle_heap()
        asyncio.run(_run(engine))
    finally:
        services.close()


def _serve_with_health(state: CliState, host: str, port: int) -> None:
    """The engine in the lifespan of a small app with only health and metrics."""
    import uvicorn

    from pushcore_http.app import create_ops_app
    from pushcore_http.server import server_options

    settings = state.settings
    sock = listen(host, port)
    try:
        app = create_ops_app(state.build_services(server=True))
        where = url(host, sock.getsockname()[1])
        output.say(
            f"pushcore worker delivering (data directory: {settings.data_dir});"
            f" /healthz, /readyz and /metrics on {where}"
        )
        config = uvicorn.Config(app, **server_options(settings, host=host, port=port))
        settle_heap()
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
    output.say("pushcore worker stopped")


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
