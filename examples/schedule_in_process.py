"""Schedule in-process with the library: the services and a delivery engine in your program.

No server: the program opens the data directory itself (SQLite by default,
or PUSHCORE_DATABASE_URL), schedules a notification to a webhook and runs
the delivery engine until it is delivered.

    PUSHCORE_DATA_DIR=./data PUSHCORE_ALLOW_PRIVATE_NETWORKS=true \
        python examples/schedule_in_process.py http://127.0.0.1:9000/hook

(Allowing private networks is only needed for a webhook on this machine.)
"""

from __future__ import annotations

import asyncio
import sys
from datetime import timedelta

import pushcore

ACCOUNT = "example"  # in-process there is no login: you name the account


async def main(webhook: str) -> None:
    """Register the webhook, schedule for two seconds from now, deliver, report."""
    settings = pushcore.load_settings()  # PUSHCORE_* environment variables, then defaults
    services = pushcore.build_services(settings)
    try:
        # Most use cases are plain blocking calls (a short database transaction);
        # no engine runs yet, so calling one here holds up nothing.
        device = pushcore.NewDevice(token=webhook, platform=pushcore.Platform.WEBHOOK)
        services.devices.register(ACCOUNT, device)
        print("registered the webhook device")

        due = services.clock.now() + timedelta(seconds=2)
        request = pushcore.NewNotification(
            title="Backup finished", body="Scheduled in-process", scheduled_at=due
        )
        # Creating is async (so are stream creates and sends): it checks a
        # senderIcon URL, if given, and awaits the commit without holding a thread.
        notification = await services.notifications.create(ACCOUNT, request)
        print(f"scheduled {notification.title!r} for in 2 s: {notification.status}")

        # The engine delivers due notifications in a task of this event loop
        # (what `pushctl serve` and `pushctl worker` run); stop it when done.
        engine = pushcore.build_engine(services)
        runner = engine.start()
        try:
            detail = await settled(services, notification.id)
        finally:
            await engine.stop()
            await asyncio.gather(runner, return_exceptions=True)
        counts = detail.deliveries
        print(f"{detail.notification.status}: {counts.delivered} delivered, {counts.failed} failed")
    finally:
        services.close()


async def settled(services: pushcore.Services, notification_id: str) -> pushcore.NotificationDetail:
    """The notification once it is no longer queued (``get`` blocks: it runs in a thread,
    so that the engine keeps delivering on this loop meanwhile)."""
    for _ in range(150):
        detail = await asyncio.to_thread(services.notifications.get, ACCOUNT, notification_id)
        if detail.notification.status != "QUEUED":
            break
        await asyncio.sleep(0.2)
    return detail


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
