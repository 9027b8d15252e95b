"""An asyncio program with pushcore.AsyncClient: schedule a batch at once, list it, cancel it.

    PUSHCORE_URL=http://127.0.0.1:8080 PUSHCORE_API_KEY=psk_... python examples/async_client.py

The key needs notifications:read and notifications:write.
"""

from __future__ import annotations

import asyncio
import os
import sys

import pushcore

REMINDERS = ["Stand-up", "Review the release", "Rotate the keys"]


async def main() -> None:
    """Schedule the reminders concurrently for in an hour, then cancel them all."""
    async with pushcore.AsyncClient(
        os.environ.get("PUSHCORE_URL", "http://127.0.0.1:8080"),
        api_key=os.environ["PUSHCORE_API_KEY"],
    ) as client:
        scheduled = await asyncio.gather(
            *(client.notifications.create(title, delay="1h") for title in REMINDERS)
        )
        print(f"scheduled {len(scheduled)} reminders for in an hour")

        # list() is an async iterator over every page.
        mine = {n.id for n in scheduled}
        queued = [n.title async for n in client.notifications.list(status="QUEUED") if n.id in mine]
        print("queued:", ", ".join(sorted(queued)))

        cancelled = await asyncio.gather(*(client.notifications.cancel(n.id) for n in scheduled))
        print(f"cancelled {sum(n.status == 'CANCELLED' for n in cancelled)}")

        try:
            await client.notifications.cancel(scheduled[0].id)
        except pushcore.NotCancellable as error:
            print(f"cancelling again: {error.status} {error.code}")

        stats = await client.notifications.stats()
        print(f"account: {stats.by_status['CANCELLED']} cancelled of {stats.total}")


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)
