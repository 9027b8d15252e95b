"""A webhook receiver that checks pushcore's signatures (Standard Webhooks), stdlib only.

    PUSHCORE_URL=http://127.0.0.1:8080 PUSHCORE_API_KEY=psk_... \\
        python examples/webhook_receiver.py [--port 8099]

The key needs two scopes; on the server's machine, ``pushctl keys create --account alice
--name demo --scope notifications:write --scope devices:write`` prints one (once).

It listens on 127.0.0.1, registers itself as a webhook device (the answer holds
the device's secret, shown once), sends itself one notification, and prints what
arrived once its signature verified; a POST without a valid signature is refused
with 401. The server must be allowed to post to loopback addresses for this demo
(PUSHCORE_ALLOW_PRIVATE_NETWORKS=true on the server). The check is
``pushcore.webhooks.verify``, which event webhooks (docs/webhooks.md) are
checked with too; the ``standardwebhooks`` package does the same.
"""

from __future__ import annotations

import argparse
import os
import queue
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

import pushcore
import pushcore.webhooks


def serve(port: int, secret_box: list[str], arrived: queue.Queue[dict[str, object]]) -> str:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            headers = {k.lower(): v for k, v in self.headers.items()}
            try:
                # The parsed body once the signature and its timestamp check out.
                delivery = pushcore.webhooks.verify(secret_box[0], headers, body)
            except (pushcore.InvalidSignature, IndexError):
                delivery = None
            ok = delivery is not None
            self.send_response(200 if ok else 401)
            self.send_header("Content-Length", "0")
            self.end_headers()
            if delivery is not None:
                arrived.put({"id": headers["webhook-id"], **delivery})
            else:
                print("refused a POST without a valid signature: 401")

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/hook"


def main() -> None:
    parser = argparse.ArgumentParser(description="A signature-checking webhook receiver.")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    secret_box: list[str] = []
    arrived: queue.Queue[dict[str, object]] = queue.Queue()
    url = serve(args.port, secret_box, arrived)

    with pushcore.Client(os.environ["PUSHCORE_URL"], api_key=os.environ["PUSHCORE_API_KEY"]) as c:
        device = c.devices.register("webhook", url, name="signed receiver")
        assert device.secret is not None  # a webhook device's answer carries its secret
        secret_box.append(device.secret)
        print(f"registered {url} with a whsec_ secret")
        # Anyone can POST here; only pushcore can sign.
        httpx.post(url, content=b"{}", timeout=5)
        c.notifications.create("Signed and delivered", delay="5s")
        delivery = arrived.get(timeout=60)
        print(f"verified {delivery['title']!r} (webhook-id {str(delivery['id'])[:4]}...)")
        c.devices.remove(device.id)


if __name__ == "__main__":
    main()
