"""pushctl serve: the HTTP API in one process, on the same services as every other command."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit, urlunsplit

import typer

from pushcore.config import Settings
from pushcore.runtime.heap import settle_heap
from pushcore_cli import output
from pushcore_cli.commands import configure_logging, state_of
from pushcore_cli.workers import supervise


def url(host: str, port: int) -> str:
    """The URL of ``host:port`` (an IPv6 host in brackets)."""
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def serve(
    ctx: typer.Context,
    host: Annotated[
        str | None,
        typer.Option("--host", help="Address to listen on. Default: PUSHCORE_HOST or 127.0.0.1."),
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(
            "--port", min=0, max=65535, help="Port to listen on. Default: PUSHCORE_PORT or 8080."
        ),
    ] = None,
    engine: Annotated[
        bool,
        typer.Option(
            "--engine/--no-engine",
            help="Deliver in this process too (default), or serve the API only and leave"
            " delivery to `pushctl worker` processes.",
        ),
    ] = True,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            min=1,
            max=64,
            help="Server processes sharing the port (default 1). The delivery engine runs in"
            " one of them (none with --no-engine); see docs/deployment.md, Scale-out.",
        ),
    ] = 1,
) -> None:
    """Run the HTTP API server (and the delivery engine) until stopped (Ctrl-C or SIGTERM).

    With --workers N, N processes serve the API on one port and worker 1 also
    runs the delivery engine; stopping the command stops them all.

    Example: pushctl serve --port 8080 --workers 2
    """
    # Imported here: the server's dependencies are not needed by any other command.
    from pushcore_http import create_app
    from pushcore_http.server import serve as run_server

    state = state_of(ctx)
    settings = state.settings
    if workers > 1 and settings.effective_database_url.startswith("memory:"):
        raise typer.BadParameter(
            "the workers need a database they share (SQLite or PostgreSQL), not memory://",
            param_hint="'--workers'",
        )
    host = settings.host if host is None else host
    port = settings.port if port is None else port
    log_level = settings.log_level.lower()
    configure_logging(log_level)
    # The port first: when it is taken, nothing else has started and nothing
    # claims to be serving.
    sock = listen(host, port)
    try:
        # Not the CLI's shared services: the app's lifespan owns and closes these.
        services = state.build_services(server=True)
        app = create_app(services, run_engine=engine) if workers == 1 else None
        if app is None:
            # Settled here once (the schema, the shared VAPID key pair, a configuration
            # error) and closed: each worker opens its own after the fork.
            services.close()
        where = url(host, sock.getsockname()[1])
        output.say(
            f"pushcore serving on {where}\n"
            f"  the app:      {where}/app/\n"
            f"  the API docs: {where}/docs\n"
            f"  the database: {shown_database(settings)}\n"
            f"  data directory: {settings.data_dir.resolve()}"
        )
        if app is not None:
            settle_heap()
            run_server(app, settings, sock, host=host)
            return

        # The workers tell each other of wake-ups, and on SQLite of reads and dismissals
        # (PostgreSQL's NOTIFY does that there): sockets in a directory of their own.
        on_sqlite = settings.effective_database_url.startswith("sqlite:")
        relay = Path(tempfile.mkdtemp(prefix="pushcore-workers-"))

        def run(index: int) -> None:
            from pushcore.runtime.siblings import Siblings

            # One engine (with the schedule materialiser and the event sender): worker 1's.
            delivers = engine and index == 0
            services = state.build_services(server=True)
            hub = services.live if on_sqlite else None
            Siblings(relay, index, workers).listen(services.wakes, hub, engine=delivers)
            app = create_app(services, run_engine=delivers)
            note = ", with the delivery engine" if delivers else ""
            output.say(f"  worker {index + 1}: pid {os.getpid()}{note}")
            settle_heap()
            run_server(app, settings, sock, host=host)

        try:
            code = supervise(workers, run)
        finally:
            shutil.rmtree(relay, ignore_errors=True)
        raise typer.Exit(code)
    finally:
        sock.close()


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (uvicorn listens on it); exit 1 when it cannot be."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    # As uvicorn does: a restarted server may bind while old connections linger.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        reason = (error.strerror or str(error)).lower()
        hint = " (another server on it? pick one with --port)" if port else ""
        output.error(f"cannot listen on {url(host, port)}: {reason}{hint}")
        raise typer.Exit(1) from None
    return sock


def shown_database(settings: Settings) -> str:
    """Which database serves, as it may be printed: a password in its URL is masked."""
    if settings.database_url is None:
        return f"SQLite, {(settings.data_dir / 'pushcore.db').resolve()}"
    parts = urlsplit(settings.database_url)
    if parts.password is None:
        return settings.database_url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))
