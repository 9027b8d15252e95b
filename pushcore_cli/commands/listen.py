"""pushctl listen: a local webhook device that prints each notification as it arrives.

It only receives: the deliveries come from whichever process runs the
delivery engine (``pushctl serve``) on the same database. Each delivery's
Standard Webhooks signature is checked with the secret the registration
answered: a POST that does not verify is refused (401) and not printed.
"""

from __future__ import annotations

import contextlib
import json
import queue
import secrets
import signal
import socket
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType
from typing import Annotated, Any
from urllib.parse import urlsplit

import typer

from pushcore.domain.errors import NotFound, ValidationError
from pushcore.domain.model import Platform
from pushcore.domain.webhooks import verify
from pushcore_cli import output
from pushcore_cli.commands import AccountOption, Api, api_for

# A delivery payload is a few KiB at most (metadata is capped at 4 KiB).
MAX_BODY = 1024 * 1024
POLL_SECONDS = 0.2
REGISTRATION_WAIT = 10.0
DEFAULT_NAME = "pushctl listen"
ALLOW_HINT = (
    "set PUSHCORE_ALLOW_PRIVATE_NETWORKS=true for local listening"
    " (for pushctl listen, and for the pushctl serve that delivers to it)"
)

Inbox = queue.Queue[dict[str, Any]]


class Receiver(ThreadingHTTPServer):
    """An HTTP server that takes JSON POSTs on one secret path and queues them."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], path: str, inbox: Inbox) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.path = path
        self.inbox = inbox
        # The signing secret, known once the registration has answered (``registered``).
        self.secret: str | None = None
        self.registered = threading.Event()
        super().__init__(address, ReceiverHandler)


class ReceiverHandler(BaseHTTPRequestHandler):
    """Answers 200 to a JSON object POSTed to the receiver's path, then queues it."""

    server: Receiver

    def do_POST(self) -> None:
        """Take one delivery."""
        if urlsplit(self.path).path != self.server.path:
            self._answer(404)
            return
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            self._answer(411)
            return
        if not 0 <= length <= MAX_BODY:
            self._answer(413)
            return
        raw = self.rfile.read(length)
        # A delivery may come as the registration answers: wait for its secret.
        self.server.registered.wait(REGISTRATION_WAIT)
        secret = self.server.secret
        headers = {name.lower(): value for name, value in self.headers.items()}
        if secret is not None and not verify(secret, headers, raw, int(time.time())):
            output.warn("refused a POST whose webhook signature does not verify (not pushcore's)")
            self._answer(401)
            return
        try:
            payload = json.loads(raw)
        except ValueError:
            payload = None
        if not isinstance(payload, dict):
            output.warn("ignored a POST whose body is not a JSON object")
            self._answer(400)
            return
        # Answer before queueing: with --once the process may stop right after
        # printing, and the sender must have its 200 by then.
        self._answer(200)
        self.server.inbox.put(payload)

    def _answer(self, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()
        self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: stdout is for notifications and stderr for pushctl's own diagnostics."""


def _one_line(text: str) -> str:
    # Titles and bodies come from whoever sends: no newlines or escape sequences
    # reach the terminal, and one notification stays one line.
    return " ".join("".join(ch if ch.isprintable() else " " for ch in text).split())


def describe(payload: dict[str, Any], received: datetime) -> str:
    """A notification payload as one line for people: time, title, body, sender, stream."""
    line = f"{received.astimezone(UTC):%H:%M:%SZ}  {_one_line(str(payload.get('title', '')))}"
    body = payload.get("body")
    if body:
        line += f" — {_one_line(str(body))}"
    priority = payload.get("priority")
    if priority in ("high", "critical"):
        line += f"  [{priority}]"
    sender = payload.get("sender")
    stream = payload.get("stream")
    stream_name = stream.get("name") if isinstance(stream, dict) else None
    # A stream send is from the stream by default: say so once, not twice.
    if isinstance(sender, dict) and sender.get("name") and sender["name"] != stream_name:
        line += f"  (from {_one_line(str(sender['name']))})"
    if isinstance(stream, dict):
        code = _one_line(str(stream.get("code", "")))
        line += f"  (stream {_one_line(str(stream_name or ''))}, code {code})"
    return line


def _url(host: str, port: int, path: str) -> str:
    netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return f"http://{netloc}{path}"


def _on_stop_signals(stop: threading.Event) -> Callable[[], None]:
    """Make SIGINT and SIGTERM set ``stop``; returns what puts the old handlers back."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None  # only the main thread may set handlers, and it gets the signals

    def handler(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore


def listen(
    ctx: typer.Context,
    port: Annotated[
        int,
        typer.Option("--port", min=0, max=65535, help="Port to listen on; 0 picks a free one."),
    ] = 0,
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on (and to register).")
    ] = "127.0.0.1",
    name: Annotated[
        str, typer.Option("--name", help="The name of the webhook device it registers.")
    ] = DEFAULT_NAME,
    once: Annotated[
        bool, typer.Option("--once", help="Exit after the first notification.")
    ] = False,
    webhook: Annotated[
        bool,
        typer.Option(
            "--webhook",
            help="Receive as a local webhook device (today the only way; signatures checked).",
        ),
    ] = True,
    account: AccountOption = None,
    json_output: Annotated[
        bool,
        typer.Option("--json", help="Print each delivery payload as one line of JSON."),
    ] = False,
) -> None:
    """Receive notifications here: register a local webhook device and print what arrives.

    The device is removed again on exit (Ctrl-C, SIGTERM, or after one with --once).
    Deliveries come from the delivery engine of pushctl serve on the same data, or,
    with --url, of that server (which must be able to reach --host).

    Example: PUSHCORE_ALLOW_PRIVATE_NETWORKS=true pushctl listen --account alice
    """
    del webhook  # today's only way: the flag names it (a live device is to come)
    api = api_for(ctx, account)
    inbox: Inbox = queue.Queue()
    # The random path keeps other local programs from posting into this listener by chance.
    receiver = Receiver((host, port), "/" + secrets.token_urlsafe(16), inbox)
    url = _url(host, receiver.server_address[1], receiver.path)
    serving = threading.Thread(
        target=receiver.serve_forever,
        # How often it looks for a shutdown request: exit promptly.
        kwargs={"poll_interval": POLL_SECONDS},
        name="pushctl-listen",
        daemon=True,
    )
    serving.start()
    try:
        device, receiver.secret = _register(api, url, name)
    except BaseException:
        receiver.shutdown()
        receiver.server_close()
        raise
    finally:
        receiver.registered.set()

    stop = threading.Event()
    restore = _on_stop_signals(stop)
    try:
        output.say(
            f"Listening on {url} as webhook device {device} of {api.who}"
            + ("; exits after one notification." if once else "; Ctrl-C to stop.")
        )
        while not stop.is_set():
            try:
                payload = inbox.get(timeout=POLL_SECONDS)
            except queue.Empty:
                continue
            if json_output:
                typer.echo(json.dumps(payload, ensure_ascii=False, separators=(",", ":")))
            else:
                typer.echo(describe(payload, datetime.now(UTC)))
            if once:
                break
    except KeyboardInterrupt:
        pass  # a Ctrl-C before the handlers were in place
    finally:
        restore()
        receiver.shutdown()
        receiver.server_close()
        # Already removed by someone else: the goal is met all the same.
        with contextlib.suppress(NotFound):
            api.client.devices.remove(device)
        output.say(f"Removed device {device}.")


def _register(api: Api, url: str, name: str) -> tuple[str, str | None]:
    """Register ``url`` as a webhook device of the account; its id and signing secret."""
    try:
        registered = api.client.devices.register(Platform.WEBHOOK, url, name=name)
        return registered.id, registered.secret
    except ValidationError as error:
        # Refused as a private address: the one refusal a setting can lift.
        refused = [d for d in error.details if d.field == "token" and "private" in d.message]
        if not refused:
            raise
        output.error(f"cannot register {url} as a webhook device: the URL {refused[0].message}")
        output.say(f"hint: {ALLOW_HINT}")
        raise typer.Exit(1) from None
