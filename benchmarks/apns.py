"""APNs throughput: notifications due -> accepted by a fake APNs server over HTTP/2.

    .venv/bin/python -m benchmarks.apns [--count 20000] [--processes 1,2] [--repeat 3]
        [--fakes h2,native] [--no-write]
    .venv/bin/python -m benchmarks.apns --postgres [--database-url URL] [--processes 1,2]
        [--count 20000] [--repeat 3] [--fakes native]

Two fakes, each in its own process, check every request the same way
(tests/fakes/apns_server.py: the provider token's ES256 signature, headers,
path and payload): the h2 fake speaks HTTP/2 through the pure-Python ``h2``
library (the one the tests drive, with GOAWAY and stream-limit knobs), the
native fake through granian (Rust's hyper and rustls; tests/fakes/apns_native.py).
Against each, the same requests are sent by:

1. the floor: a minimal raw-h2 client (two connections, pipelined, no
   bookkeeping);
2. one ApnsGateway in this process (what one pushcore process can push);
3. the whole service: `pushctl serve` (SQLite, the delivery engine), alone
   and with `pushctl worker` processes beside it on the same database:
   once they run (idle), the notifications are inserted, all due at one time
   a few seconds later; timed from the due time to the last request the fake
   accepted.

Also prints the gateway's CPU profile (top functions) and the CPU each
process used per push. Results are written to docs/benchmarks.md (section
"APNs throughput").

With ``--postgres`` (a throwaway cluster, benchmarks/processes.py) or
``--database-url`` (a server of yours; a fresh database per run), only the
whole service, on PostgreSQL: ``--processes`` then counts the `pushctl
worker` processes beside one `pushctl serve --no-engine`, alternating round by
round. Printed with the cores each process, the fake and PostgreSQL used;
not written (benchmarks/postgres.py writes the PostgreSQL section).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import os
import platform
import pstats
import ssl
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import h2.config
import h2.connection
import h2.events
import h2.settings
import httpx
import trustme
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from benchmarks.processes import (
    Deployment,
    Postgres,
    children,
    cpu_seconds,
    free_port,
    library_settings,
    postgres,
)
from benchmarks.report import write_section
from benchmarks.scheduling import cores_text
from pushcore import build_services
from pushcore.consistency import new_deliveries
from pushcore.domain.inputs import NewDevice
from pushcore.domain.model import (
    Delivery,
    Device,
    IconStyle,
    Notification,
    Platform,
    Priority,
    Sound,
)
from pushcore.domain.outcomes import Delivered, Dispatch
from pushcore.domain.states import DeliveryStatus, NotificationStatus
from pushcore.gateways.apns import ApnsGateway, ProviderToken, apns_payload
from pushcore.runtime.system import SystemClock, UlidGenerator

TOKEN = "ab" * 32
# Seconds between inserting the notifications (the processes already running) and their
# due time: the insert's own time (about 2,000 rows a second at worst on a busy machine),
# plus the scheduler's tick (1 s: the processes find rows another process wrote by then).
LEAD = 3.0
INSERTS_PER_SECOND = 2_000


class H2Fake:
    """The h2 fake (tests/fakes/apns_server.py) in its own process."""

    name = "h2 fake (pure-Python h2)"

    def __init__(self, key_file: Path, ca_file: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.apns_fake", str(key_file), str(ca_file)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.port = json.loads(self.process.stdout.readline())["port"]
        self.url = f"https://127.0.0.1:{self.port}"
        self.ca_file = ca_file

    def _ask(self, command: str) -> dict[str, Any]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        answer: dict[str, Any] = json.loads(self.process.stdout.readline())
        return answer

    def count(self) -> dict[str, Any]:
        """Accepted and rejected requests, and the first and last acceptance times."""
        return self._ask("count")

    def reset(self) -> None:
        """Forget the requests seen so far."""
        self._ask("reset")

    def cpu(self) -> float:
        """CPU seconds the fake's process has used."""
        return cpu_seconds(self.process.pid)

    def pids(self) -> list[int]:
        """The fake's process."""
        return [self.process.pid]

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write("quit\n")
        self.process.stdin.flush()
        self.process.wait(10)


class NativeFake:
    """The same checks behind granian's HTTP/2 (tests/fakes/apns_native.py), in its own process."""

    name = "native fake (granian)"

    def __init__(self, key_file: Path, ca_file: Path) -> None:
        ca = trustme.CA()
        cert = ca.issue_cert("localhost", "127.0.0.1")
        directory = ca_file.parent
        cert.cert_chain_pems[0].write_to_path(str(directory / "native-cert.pem"))
        cert.private_key_pem.write_to_path(str(directory / "native-key.pem"))
        ca.cert_pem.write_to_path(str(ca_file))
        self.ca_file = ca_file
        self.port = free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        granian = Path(sys.executable).with_name("granian")
        self.process = subprocess.Popen(
            [str(granian), "--interface", "rsgi", "--http", "2", "--factory",
             "--host", "127.0.0.1", "--port", str(self.port), "--workers", "1",
             "--runtime-threads", "1", "--http2-max-concurrent-streams", "1000",
             "--ssl-certificate", str(directory / "native-cert.pem"),
             "--ssl-keyfile", str(directory / "native-key.pem"), "--log-level", "warning",
             "tests.fakes.apns_native:create_app"],
            env={**os.environ, "PUSHCORE_FAKE_APNS_KEY_FILE": str(key_file)},
            cwd=Path(__file__).resolve().parent.parent,
        )  # fmt: skip
        self._client = httpx.Client(
            http2=True, verify=ssl.create_default_context(cafile=str(ca_file))
        )
        for _ in range(100):
            try:
                self.count()
                return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError("the native fake did not start")

    def count(self) -> dict[str, Any]:
        """Accepted and rejected requests, and the first and last acceptance times."""
        answer: dict[str, Any] = self._client.get(f"{self.url}/fake/count").json()
        return answer

    def reset(self) -> None:
        """Forget the requests seen so far."""
        self._client.post(f"{self.url}/fake/reset")

    def cpu(self) -> float:
        """CPU seconds granian's processes (its supervisor and worker) have used."""
        return sum(cpu_seconds(pid) for pid in self.pids())

    def pids(self) -> list[int]:
        """granian's supervisor and its worker."""
        return [self.process.pid, *children(self.process.pid)]

    def stop(self) -> None:
        self._client.close()
        self.process.terminate()
        self.process.wait(10)


Fake = H2Fake | NativeFake


def notification(i: int) -> Notification:
    now = datetime.now(UTC)
    return Notification(
        id=f"ntf_{i:026d}",
        account_id="bench",
        title="Benchmark",
        body=f"push {i}",
        icon_style=IconStyle.BOLT,
        sound=Sound.DEFAULT,
        priority=Priority.NORMAL,
        delay="5s",
        custom_delay=None,
        target_device_token=None,
        metadata={},
        scheduled_at=now,
        sender_name=None,
        sender_icon=None,
        status=NotificationStatus.QUEUED,
        created_at=now,
        devices_targeted=1,
    )


async def floor(url: str, tls: ssl.SSLContext, key_pem: bytes, count: int) -> float:
    """Pushes/s of a minimal raw-h2 client on two connections (as many as the gateway's)."""
    started = time.perf_counter()
    half = count // 2
    await asyncio.gather(
        floor_connection(url, tls, key_pem, half),
        floor_connection(url, tls, key_pem, count - half),
    )
    return count / (time.perf_counter() - started)


async def floor_connection(url: str, tls: ssl.SSLContext, key_pem: bytes, count: int) -> None:
    """``count`` requests on one connection, pipelined, with no bookkeeping."""
    host, port = url.removeprefix("https://").split(":")
    tls.set_alpn_protocols(["h2"])
    reader, writer = await asyncio.open_connection(host, int(port), ssl=tls)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
    conn.initiate_connection()
    writer.write(conn.data_to_send())
    token = ProviderToken(key_pem, "KEY1234567", "TEAM123456", SystemClock()).current()
    body = json.dumps(apns_payload(notification(0)), separators=(",", ":")).encode()
    base = [
        (":method", "POST"),
        (":scheme", "https"),
        (":authority", host),
        (":path", f"/3/device/{TOKEN}"),
        ("authorization", f"bearer {token}"),
        ("apns-topic", "bench"),
        ("apns-push-type", "alert"),
        ("apns-priority", "10"),
    ]
    limit = 1000
    sent = done = 0
    while done < count:
        # Open streams while the limits allow: concurrent streams and the
        # connection's flow-control window (refilled by the server's updates).
        while (
            sent < count and sent - done < limit and conn.outbound_flow_control_window >= len(body)
        ):
            stream = conn.get_next_available_stream_id()
            conn.send_headers(stream, [*base, ("apns-id", str(uuid.uuid4()))])
            conn.send_data(stream, body, end_stream=True)
            sent += 1
        writer.write(conn.data_to_send())
        data = await reader.read(1 << 20)
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.StreamEnded):
                done += 1
            elif isinstance(event, h2.events.RemoteSettingsChanged):
                setting = event.changed_settings.get(
                    h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS
                )
                if setting is not None:
                    limit = min(limit, setting.new_value)
            elif isinstance(event, h2.events.DataReceived):
                conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        writer.write(conn.data_to_send())
    writer.close()


async def one_gateway(gateway: ApnsGateway, count: int, batch: int) -> float:
    """Pushes/s of one ApnsGateway sending ``count`` dispatches in batches."""
    now = datetime.now(UTC)
    device = Device("dev_1", "bench", Platform.IOS, TOKEN, None, now)
    dispatches = [
        Dispatch(
            Delivery(f"dlv_{i}", f"ntf_{i}", "bench", "dev_1", DeliveryStatus.IN_FLIGHT, now),
            device,
            notification(i),
        )
        for i in range(count)
    ]
    started = time.perf_counter()
    delivered = 0
    for start in range(0, count, batch):
        outcomes = await gateway.send(dispatches[start : start + batch])
        delivered += sum(isinstance(o, Delivered) for o in outcomes)
    elapsed = time.perf_counter() - started
    await gateway.aclose()
    assert delivered == count, f"only {delivered} of {count} delivered"
    return count / elapsed


def profile_text(profiler: cProfile.Profile) -> str:
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).sort_stats("tottime")
    stats.print_stats(12)
    lines = [line for line in out.getvalue().splitlines() if line.strip()]
    start = next(i for i, line in enumerate(lines) if "ncalls" in line)
    return "\n".join(lines[start:])


@attrs.frozen
class ServiceRun:
    """One whole-service run: the rate, and CPU per push of the service and the fake."""

    processes: int  # delivering processes (on PostgreSQL: `pushctl worker`s)
    rate: float
    service_cpu: float  # µs of CPU per push, all service processes together
    fake_cpu: float  # µs of CPU per push, the fake
    spread: tuple[float, float] = (0.0, 0.0)  # lowest and highest rate of the repeats
    # Cores each process used from the due time to the last acceptance (and the machine's).
    cores: dict[str, float] = attrs.field(factory=dict)


def gateway_env(fake: Fake, key_file: Path) -> dict[str, str]:
    """The PUSHCORE_APNS_* settings that send to ``fake``."""
    return {
        "PUSHCORE_APNS_KEY_FILE": str(key_file),
        "PUSHCORE_APNS_KEY_ID": "KEY1234567",
        "PUSHCORE_APNS_TEAM_ID": "TEAM123456",
        "PUSHCORE_APNS_TOPIC": "bench",
        "PUSHCORE_APNS_URL": fake.url,
        "PUSHCORE_CA_FILE": str(fake.ca_file),
    }


def service(
    data_dir: Path,
    fake: Fake,
    key_file: Path,
    count: int,
    processes: int,
    database_url: str | None = None,
    postgres_pids: Callable[[], list[int]] | None = None,
) -> ServiceRun:
    """``count`` notifications due at once, all to the fake, delivered by ``processes``
    processes: on SQLite `pushctl serve` plus ``processes - 1`` `pushctl worker`s; on
    PostgreSQL (``database_url``) ``processes`` `pushctl worker`s beside one `pushctl
    serve --no-engine`."""
    env = gateway_env(fake, key_file)
    if database_url is None:
        deployment = Deployment(data_dir, settings=env, workers=processes - 1)
    else:
        deployment = Deployment(
            data_dir, database_url, engine=False, workers=processes, settings=env
        )
    # Started first and idle: their start-up (slower on a busy machine) is not timed.
    # A clean run logs no error (a failed claim or record, a gateway bug): stop() checks.
    with deployment:
        services = build_services(library_settings(data_dir, database_url, env))
        device = services.devices.register(
            "bench", NewDevice(token=TOKEN, platform=Platform.IOS)
        ).device
        due = datetime.now(UTC) + timedelta(seconds=LEAD + count / INSERTS_PER_SECOND)
        ids = UlidGenerator()
        made = [
            attrs.evolve(notification(i), id=ids.new_id("ntf"), scheduled_at=due)
            for i in range(count)
        ]
        # In bulk, as a batch create does: row by row took too long on PostgreSQL.
        with services.store.transaction() as tx:
            tx.notifications.add_many(made)
            tx.schedule.add_many([d for n in made for d in new_deliveries(ids, n, [device], due)])
        services.close()
        left = (due - datetime.now(UTC)).total_seconds()
        if left < 1.1:
            raise RuntimeError(f"inserting took too long: {left:.1f} s left before due")
        fake.reset()
        time.sleep(max(0.0, left - 0.05))
        delivering = [*deployment.servers, *deployment.worker_processes]
        cpu_before = sum(cpu_seconds(p.pid) for p in delivering), fake.cpu()
        extra: dict[str, Any] = {"fake": fake.pids}
        if postgres_pids is not None:
            extra["postgres"] = postgres_pids
        window = deployment.cpu_window(extra)
        deadline = time.time() + 120
        answer = fake.count()
        while time.time() < deadline and answer["accepted"] < count:
            time.sleep(0.1)
            answer = fake.count()
        cores = window.stop()
        cpu_after = sum(cpu_seconds(p.pid) for p in delivering), fake.cpu()
    assert answer["accepted"] >= count, answer
    return ServiceRun(
        processes,
        count / (answer["last"] - due.timestamp()),
        (cpu_after[0] - cpu_before[0]) / count * 1e6,
        (cpu_after[1] - cpu_before[1]) / count * 1e6,
        cores=cores,
    )


@attrs.frozen
class FakeRun:
    """Every client's figures against one fake."""

    fake: str
    floor: float
    gateway: float
    gateway_cpu: float  # µs of this process's CPU per push
    services: list[ServiceRun]


def gateway_for(fake: Fake, key_pem: bytes) -> ApnsGateway:
    """A fresh ApnsGateway sending to ``fake``."""
    return ApnsGateway(
        key_pem=key_pem,
        key_id="KEY1234567",
        team_id="TEAM123456",
        topic="bench",
        base_url=fake.url,
        clock=SystemClock(),
        tls=ssl.create_default_context(cafile=str(fake.ca_file)),
    )


def run_against(
    fake: Fake, key_file: Path, data_dir: Path, count: int, processes: list[int], repeat: int
) -> tuple[FakeRun, cProfile.Profile]:
    """The floor, one gateway (profiled, then not) and the whole service, against ``fake``."""
    key_pem = key_file.read_bytes()
    tls = ssl.create_default_context(cafile=str(fake.ca_file))
    floor_rate = asyncio.run(floor(fake.url, tls, key_pem, count))
    print(f"{fake.name}: floor (raw h2) {floor_rate:,.0f}/s", flush=True)
    profiler = cProfile.Profile()
    profiler.enable()
    asyncio.run(one_gateway(gateway_for(fake, key_pem), count, 500))
    profiler.disable()
    # Without the profiler's overhead, for the figures themselves.
    cpu = time.process_time()
    gateway_rate = asyncio.run(one_gateway(gateway_for(fake, key_pem), count, 500))
    gateway_cpu = (time.process_time() - cpu) / count * 1e6
    print(f"{fake.name}: one ApnsGateway {gateway_rate:,.0f}/s", flush=True)
    runs = []
    for n in processes:
        repeats = []
        for attempt in range(repeat):
            where = data_dir / f"{type(fake).__name__}-{n}-{attempt}"
            repeats.append(service(where, fake, key_file, count, n))
            rate = repeats[-1].rate
            print(f"{fake.name}: whole service, {n} process(es): {rate:,.0f}/s", flush=True)
        runs.append(median_run(repeats))
    return FakeRun(fake.name, floor_rate, gateway_rate, gateway_cpu, runs), profiler


def median_run(repeats: list[ServiceRun]) -> ServiceRun:
    """The median run, with the spread of all: this machine's speed drifts."""
    repeats = sorted(repeats, key=lambda r: r.rate)
    median = repeats[len(repeats) // 2]
    return attrs.evolve(median, spread=(repeats[0].rate, repeats[-1].rate))


def postgres_runs(
    pg: Postgres,
    fake: Fake,
    key_file: Path,
    data_root: Path,
    count: int,
    workers: list[int],
    repeat: int,
) -> list[ServiceRun]:
    """The whole service on PostgreSQL (a fresh database a run) with each count of
    workers, alternating round by round; per count the median run, with the spread."""
    repeats: dict[int, list[ServiceRun]] = {n: [] for n in workers}
    for attempt in range(repeat):
        for n in workers:
            where = data_root / f"pg-{type(fake).__name__}-{n}-{attempt}"
            done = service(where, fake, key_file, count, n, pg.fresh(), pg.server_pids)
            repeats[n].append(done)
            print(
                f"{fake.name}, PostgreSQL, {n} worker(s): {done.rate:,.0f}/s;"
                f" cores: {cores_text(done.cores)}",
                flush=True,
            )
    return [median_run(runs) for runs in repeats.values()]


def make_key(directory: Path) -> Path:
    """A fresh ES256 provider key (.p8) in ``directory``."""
    key_file = directory / "AuthKey.p8"
    key_file.write_bytes(
        ec.generate_private_key(ec.SECP256R1()).private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return key_file


FAKES: dict[str, tuple[type[H2Fake] | type[NativeFake], str]] = {
    "h2": (H2Fake, "h2-ca.pem"),
    "native": (NativeFake, "native-ca.pem"),
}


def postgres_main(args: argparse.Namespace) -> None:
    """The whole-service runs on PostgreSQL, against each fake, printed."""
    workers = [int(n) for n in args.processes.split(",")]
    with postgres(args.database_url) as pg, tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        key_file = make_key(directory)
        for kind, ca_name in (FAKES[name] for name in args.fakes.split(",")):
            fake = kind(key_file, directory / ca_name)
            try:
                postgres_runs(pg, fake, key_file, directory, args.count, workers, args.repeat)
            finally:
                fake.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=20_000)
    parser.add_argument(
        "--processes", default="1,2", help="service process counts to run, e.g. 1,2"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs of each service setup")
    parser.add_argument("--fakes", default="h2,native", help="which fakes: h2, native or both")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument(
        "--postgres",
        action="store_true",
        help="the whole service only, on a throwaway PostgreSQL cluster, with --processes"
        " counting `pushctl worker`s beside `serve --no-engine` (print only)",
    )
    parser.add_argument("--database-url", help="as --postgres, on this server")
    args = parser.parse_args()
    if args.postgres or args.database_url:
        postgres_main(args)
        return
    processes = [int(n) for n in args.processes.split(",")]
    results: list[FakeRun] = []
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        key_file = make_key(directory)
        for kind, ca_name in (FAKES[name] for name in args.fakes.split(",")):
            fake = kind(key_file, directory / ca_name)
            try:
                result, profiler = run_against(
                    fake, key_file, directory, args.count, processes, args.repeat
                )
            finally:
                fake.stop()
            results.append(result)
    body = report(args.count, args.processes, args.repeat, results, profiler)
    print(body)
    if not args.no_write:
        write_section("APNs throughput", body)


def fake_cpu(result: FakeRun) -> str:
    """The fake's CPU per request over the service runs, as a range."""
    values = sorted(s.fake_cpu for s in result.services)
    low, high = values[0], values[-1]
    return f"{low:.0f}" if round(low) == round(high) else f"{low:.0f}-{high:.0f}"


def report(
    count: int, processes: str, repeat: int, results: list[FakeRun], profiler: cProfile.Profile
) -> str:
    """The docs/benchmarks.md section: a table per fake, the reading, the profile."""
    tables = []
    for r in results:
        rows = [
            "| client | pushes/s | vs floor | client CPU per push |",
            "|---|---|---|---|",
            "| floor: minimal raw-h2 client, two connections, pipelined"
            f" | {r.floor:,.0f} | 1.00 | |",
            f"| one `ApnsGateway` in one process (batches of 500) | {r.gateway:,.0f}"
            f" | {r.gateway / r.floor:.2f} | {r.gateway_cpu:.0f} µs |",
        ]
        for s in r.services:
            who = "`pushctl serve`" + (
                f" + {s.processes - 1} `pushctl worker`" if s.processes > 1 else ""
            )
            low, high = s.spread
            rows.append(
                f"| {who} (SQLite), due -> accepted | {s.rate:,.0f} ({low:,.0f}-{high:,.0f})"
                f" | {s.rate / r.floor:.2f} | {s.service_cpu:.0f} µs (fake: {s.fake_cpu:.0f} µs) |"
            )
        tables.append(f"Against the {r.fake}:\n\n" + "\n".join(rows))
    best = max(s.rate for r in results for s in r.services)
    gateway_cpus = " and ".join(f"{r.gateway_cpu:.0f}" for r in results)
    fakes = "; ".join(f"the {r.fake} needs {fake_cpu(r)} µs per request" for r in results)
    fakes = fakes[0].upper() + fakes[1:]
    native = any(r.fake.startswith("native") for r in results)
    native_note = ": against the native fake the figures are pushcore's own" if native else ""
    command = (
        f".venv/bin/python -m benchmarks.apns --count {count} --processes {processes}"
        f" --repeat {repeat}"
    )
    return f"""Command: `{command}`

Run on {datetime.now(UTC):%Y-%m-%d}: {platform.platform()}, Python {platform.python_version()},
{os.cpu_count()} cores. Each fake runs in its own process and checks every request (the
provider token's ES256 signature, headers, path, payload size); the clients and the service
share the machine with it. CPU per push is user + system time of the processes named, from
/proc, over the run. Whole-service rows: the median of {repeat} runs (lowest-highest).

{chr(10).join(t + chr(10) for t in tables)}
Targets: one process >= 0.8 of the floor; the whole service >= 5,000 pushes/s (best here:
{best:,.0f}/s).

Reading. The fake, the service and everything else share two cores, so a push's total
CPU (service + fake, in the tables) sets the ceiling: about 2,000,000 µs / that sum,
per second. {fakes}{native_note}. One
`ApnsGateway` needs {gateway_cpus} µs per push; its profile below is h2's framing and
state machine, HPACK, and the Huffman decoding of each answer's apns-id. The whole
service adds claiming and recording in SQLite, in threads beside the event loop that
share its interpreter lock, so one process stays near 4,000-5,000/s; `pushctl worker`
processes beside `pushctl serve` on the same database share the work by leases (and queue
to write on one lock) and take it past 5,000/s. The floor is h2 as it comes (its header
checks on, one pipelined client on two connections): its own core is its limit. This
machine's speed drifts (the h2 fake's CPU per request ranged from 115 to 175 µs over one
afternoon), hence repeated runs and their spread.

Gateway CPU profile against the {results[-1].fake} (cProfile, top functions by own time,
profiled run):

```
{profile_text(profiler)}
```
"""


if __name__ == "__main__":
    main()
