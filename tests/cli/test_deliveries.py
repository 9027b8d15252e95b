"""pushctl notifications deliveries: a notification's deliveries, paged and filtered."""

from __future__ import annotations

from tests.cli.conftest import Cli
from tests.cli.test_notifications import add_device, ok, send


def test_lists_each_device_pages_and_filters(cli: Cli) -> None:
    devices = {add_device(cli, f"token-{n}")["id"] for n in range(3)}
    # Due in an hour: no engine runs in this process, and none would send it yet.
    created = send(cli, "--delay 1h")

    page = ok(cli, "notifications deliveries --account bob", created["id"])

    assert {d["deviceId"] for d in page["items"]} == devices
    assert {(d["status"], d["platform"], d["attempts"]) for d in page["items"]} == {
        ("PENDING", "android", 0)
    }
    assert page["nextCursor"] is None
    first = ok(cli, "notifications deliveries --account bob --limit 2", created["id"])
    rest = ok(
        cli,
        f"notifications deliveries --account bob --limit 2 --cursor {first['nextCursor']}",
        created["id"],
    )
    assert first["items"] + rest["items"] == page["items"]
    failed = ok(cli, "notifications deliveries --account bob --status failed", created["id"])
    assert failed["items"] == []

    table = cli("notifications deliveries --account bob", created["id"])
    assert table.exit_code == 0
    assert all(device in table.stdout for device in devices)
    refused = cli("notifications deliveries --account bob --status sent", created["id"])
    assert refused.exit_code == 1
    assert "--status" in refused.stderr
    other = cli("notifications deliveries --account alice", created["id"])
    assert other.exit_code == 1
    assert "not found" in other.stderr.lower()
