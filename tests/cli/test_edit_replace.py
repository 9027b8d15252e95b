"""pushctl send --collapse-key, pushctl notifications edit and replace."""

from __future__ import annotations

from tests.cli.conftest import Cli
from tests.cli.test_notifications import add_device, ok, send, show


def test_send_with_a_collapse_key_supersedes_the_unsent_one(cli: Cli) -> None:
    add_device(cli, "phone-1")
    old = send(cli, "--delay 1h --collapse-key build-7")
    new = send(cli, "--delay 1h --collapse-key build-7 --no-renotify")
    assert (show(cli, old["id"])["status"], show(cli, old["id"])["failureReason"]) == (
        "CANCELLED",
        "superseded",
    )
    shown = show(cli, new["id"])
    assert (shown["collapseKey"], shown["renotify"]) == ("build-7", False)
    bad = cli("send --account bob --collapse-key", "a b", "hi")
    assert bad.exit_code != 0
    assert "--collapse-key" in bad.stderr


def test_edit_with_if_revision_then_replace(cli: Cli) -> None:
    add_device(cli, "phone-1")
    created = send(cli, "--delay 1h --body running")
    edited = ok(
        cli,
        "notifications edit --account bob --title v8 --metadata a=1 --if-revision 1",
        created["id"],
    )
    assert (edited["title"], edited["metadata"], edited["revision"]) == ("v8", {"a": "1"}, 2)
    stale = cli("notifications edit --account bob --body x --if-revision 1", created["id"])
    assert stale.exit_code != 0
    assert "revision 2, not 1" in stale.stderr
    nothing = cli("notifications edit --account bob", created["id"])
    assert nothing.exit_code == 2

    people = cli("notifications replace --account bob --body passed", created["id"])
    assert people.exit_code == 0, people.output
    assert f"Replaced notification {created['id']} with ntf_" in people.stderr
    listed = ok(cli, "notifications list --account bob")
    (new,) = [n for n in listed["items"] if n["id"] != created["id"]]
    assert (new["supersedes"], new["collapseKey"], new["body"], new["title"]) == (
        created["id"],
        created["id"],
        "passed",
        "v8",
    )
    late = cli("notifications edit --account bob --title again", created["id"])
    assert late.exit_code != 0
    assert "/replace" in late.stderr
