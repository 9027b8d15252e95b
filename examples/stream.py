"""A stream with a publisher and a subscriber, both through pushcore.Client.

    # the subscriber's receiver: a live device of bob, printing what arrives
    pushctl listen --account bob          (or: pushctl listen --url URL --token "$BOB")

    PUSHCORE_URL=http://127.0.0.1:8080 \
    PUSHCORE_API_KEY=psk_...  (the publisher's key, with notifications:write) \
    PUSHCORE_TOKEN=eyJ...     (a JWT of the subscriber, another account: bob) \
        python examples/stream.py [https://subscriber.example/hook]

The subscriber finds the stream by its code and subscribes (and, given a URL,
registers it as a webhook device too); the publisher's send then reaches
every device of the subscriber, the listener's among them. When a step fails,
what the earlier steps made is removed again, so a second run starts clean.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import pushcore


def main() -> None:
    """Create a stream, subscribe another account to it, and send."""
    url = os.environ.get("PUSHCORE_URL", "http://127.0.0.1:8080")
    webhook = sys.argv[1] if len(sys.argv) > 1 else None
    undo: list[Callable[[], object]] = []
    with (
        pushcore.Client(url, api_key=os.environ["PUSHCORE_API_KEY"]) as publisher,
        pushcore.Client(url, token=os.environ["PUSHCORE_TOKEN"]) as subscriber,
    ):
        try:
            stream = publisher.streams.create("Deploys", description="Every production deploy")
            undo.append(lambda: publisher.streams.delete(stream.id))
            print(f"publisher: created stream {stream.name!r}")
            print(f"code {stream.code}")

            # The code is what the publisher shares (a link, a QR code, a chat message).
            if webhook is not None:
                hook = subscriber.devices.register("webhook", webhook, name="subscriber's hook")
                undo.append(lambda: subscriber.devices.remove(hook.id))
            found = subscriber.streams.lookup(stream.code)
            print(f"subscriber: found {found.name!r}, subscribed: {found.is_subscribed}")
            subscription = subscriber.streams.subscribe(stream.code)
            print(f"subscriber: subscribed to {subscription.stream.name!r}")

            result = publisher.streams.send(stream.id, "v2.4.0 is live", body="Deployed by CI")
            print(
                f"publisher: sent to {result.sent} device(s) of {result.subscribers} subscriber(s)"
            )
        except pushcore.PushcoreError as error:
            for step in reversed(undo):
                step()
            sys.exit(f"stopped, nothing left behind: {error}")


if __name__ == "__main__":
    main()
