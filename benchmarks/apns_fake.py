"""Runs the fake APNs server in its own process for the throughput benchmark.

Prints one JSON line (port, CA file) when ready; then answers commands on
stdin, one per line: ``count`` prints how many requests were accepted and the
first/last acceptance times; ``reset`` forgets them; ``quit`` stops.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.fakes.apns_server import FakeApns


def main() -> None:
    key_file, ca_file = Path(sys.argv[1]), Path(sys.argv[2])
    fake = FakeApns(
        key_pem=key_file.read_bytes(),
        key_id="KEY1234567",
        team_id="TEAM123456",
        topic="bench",
        strict_h2=False,
    )
    fake.start()
    fake.ca.cert_pem.write_to_path(str(ca_file))
    print(json.dumps({"port": fake.port}), flush=True)
    for line in sys.stdin:
        command = line.strip()
        if command == "count":
            print(json.dumps(fake.counts()), flush=True)
        elif command == "reset":
            fake.requests.clear()
            fake.rejected.clear()
            print("{}", flush=True)
        elif command == "quit":
            break
    fake.stop()


if __name__ == "__main__":
    main()
