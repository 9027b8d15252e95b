"""A stream with a publisher and a subscriber, both through pushcore.Client.

    PUSHCORE_URL=http://127.0.0.1:8080 \
    PUSHCORE_API_KEY=psk_...  (the publisher's key, with notifications:write) \
    PUSHCORE_TOKEN=eyJ...     (a JWT of another account: the subscriber) \
        python examples/stream.py https://subscriber.example/hook

The subscriber registers the URL as a webhook device, finds the stream by
its code and subscribes; the publisher's send then reaches that device.
"""

from __future__ import annotations

import os
import sys

import pushcore


def main() -> None:
    """Create a stream, subscribe another account's webhook to it, and send."""
    url = os.environ.get("PUSHCORE_URL", "http://127.0.0.1:8080")
    webhook = sys.argv[1]
    with (
        pushcore.Client(url, api_key=os.environ["PUSHCORE_API_KEY"]) as publisher,
        pushcore.Client(url, token=os.environ["PUSHCORE_TOKEN"]) as subscriber,
    ):
        stream = publisher.streams.create("Deploys", description="Every production deploy")
        print(f"publisher: created stream {stream.name!r}")
        print(f"code {stream.code}")

        # The code is what the publisher shares (a link, a QR code, a chat message).
        subscriber.devices.register("webhook", webhook, name="subscriber's hook")
        found = subscriber.streams.lookup(stream.code)
        print(f"subscriber: found {found.name!r}, subscribed: {found.is_subscribed}")
        subscription = subscriber.streams.subscribe(stream.code)
        print(f"subscriber: subscribed to {subscription.stream.name!r}")

        result = publisher.streams.send(stream.id, "v2.4.0 is live", body="Deployed by CI")
        print(f"publisher: sent to {result.sent} device(s) of {result.subscribers} subscriber(s)")


if __name__ == "__main__":
    main()
