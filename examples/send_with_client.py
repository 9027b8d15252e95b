"""Send a notification from a script with pushcore.Client, then follow it to delivery.

    PUSHCORE_URL=http://127.0.0.1:8080 PUSHCORE_API_KEY=psk_... \
        python examples/send_with_client.py "Backup finished" "42 GB in 3 min"

The key needs notifications:read and notifications:write; the account's
registered devices receive the notification (register one first, e.g. with
`pushctl listen`).
"""

from __future__ import annotations

import os
import sys
import time
from datetime import UTC, datetime

import pushcore


def main() -> int:
    """Send argv[1] (with the body argv[2]) now and print how it went."""
    title = sys.argv[1] if len(sys.argv) > 1 else "Hello from a script"
    body = sys.argv[2] if len(sys.argv) > 2 else None
    with pushcore.Client(
        os.environ.get("PUSHCORE_URL", "http://127.0.0.1:8080"),
        api_key=os.environ["PUSHCORE_API_KEY"],
    ) as client:
        try:
            sent = client.notifications.create(
                title, body=body, scheduled_at=datetime.now(UTC), metadata={"from": "script"}
            )
        except pushcore.PushcoreError as error:
            print(f"refused: {error.code}: {error.message}", file=sys.stderr)
            return 1
        print(f"queued {sent.title!r} for {sent.devices_targeted} device(s)")
        print(f"id {sent.id}")
        # The engine delivers in the background; poll until the notification settles.
        deadline = time.monotonic() + 30
        found = client.notifications.get(sent.id)
        while found.status == "QUEUED" and time.monotonic() < deadline:
            time.sleep(0.2)
            found = client.notifications.get(sent.id)
        counts = found.deliveries
        assert counts is not None  # a single notification always has its counts
        print(f"{found.status}: {counts.delivered} delivered, {counts.failed} failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
