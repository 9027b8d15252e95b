"""The fake APNs's checks behind a native HTTP/2 server, for the throughput benchmark.

:class:`tests.fakes.apns_server.FakeApns` speaks HTTP/2 through the pure-Python
``h2`` library, which costs it some 150 µs of CPU per request: on a 2-core
machine it caps every client near 4,000-5,000 pushes a second and the
benchmark would measure the fake rather than pushcore. Here granian (its
HTTP/2 and TLS are Rust's hyper and rustls) carries the protocol, and every
request still goes through ``FakeApns.handle``: the same provider-token
signature check, headers, path and payload checks, scripted answers and
records. The knobs that live in the h2 layer (GOAWAY, lowering
MAX_CONCURRENT_STREAMS, delays) are only on the h2 fake, where the tests use
them.

Run by granian in its own process (see benchmarks/apns.py)::

    PUSHCORE_FAKE_APNS_KEY_FILE=AuthKey.p8 granian --interface rsgi --http 2 \\
        --ssl-certificate cert.pem --ssl-keyfile key.pem --factory \\
        tests.fakes.apns_native:create_app

Besides the provider API it answers ``GET /fake/count`` (JSON: accepted,
rejected, first and last acceptance times) and ``POST /fake/reset``.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

from tests.fakes.apns_server import FakeApns


class NativeApns:
    """An RSGI application around one unstarted :class:`FakeApns`."""

    def __init__(self, fake: FakeApns) -> None:
        self.fake = fake

    async def __rsgi__(self, scope: Any, proto: Any) -> None:
        """Answer one request (granian calls this for every stream)."""
        path = scope.path
        if path.startswith("/fake/"):
            self._control(path, proto)
            return
        body = await proto()
        headers = {
            ":method": scope.method,
            ":scheme": scope.scheme,
            ":authority": scope.authority or "",
            ":path": path,
        }
        # granian gives header names lower-cased, as HTTP/2 requires them.
        headers.update(scope.headers.items())
        answer = self.fake.handle(headers, body, 1, 0)
        reply = [("apns-id", headers.get("apns-id") or str(uuid.uuid4()))]
        if answer.retry_after is not None:
            reply.append(("retry-after", answer.retry_after))
        if answer.status == 200:
            proto.response_empty(200, reply)
            return
        reason: dict[str, Any] = {"reason": answer.reason or ""}
        if answer.status == 410:
            reason["timestamp"] = int(self.fake.now().timestamp() * 1000)
        reply.append(("content-type", "application/json"))
        proto.response_bytes(answer.status, reply, json.dumps(reason).encode())

    def _control(self, path: str, proto: Any) -> None:
        fake = self.fake
        if path == "/fake/reset":
            fake.requests.clear()
            fake.rejected.clear()
            proto.response_bytes(200, [("content-type", "application/json")], b"{}")
            return
        count = fake.counts()
        proto.response_bytes(
            200, [("content-type", "application/json")], json.dumps(count).encode()
        )


def create_app() -> NativeApns:
    """The app, configured by PUSHCORE_FAKE_APNS_* (key file, key id, team id, topic)."""
    env = os.environ
    fake = FakeApns(
        key_pem=Path(env["PUSHCORE_FAKE_APNS_KEY_FILE"]).read_bytes(),
        key_id=env.get("PUSHCORE_FAKE_APNS_KEY_ID", "KEY1234567"),
        team_id=env.get("PUSHCORE_FAKE_APNS_TEAM_ID", "TEAM123456"),
        topic=env.get("PUSHCORE_FAKE_APNS_TOPIC", "bench"),
    )
    return NativeApns(fake)
