"""client.inbox on Client and AsyncClient against a real server: list, read, dismiss,
and events() that resume by themselves after the server closed the channel."""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta

import pytest

from pushcore import AsyncClient, Client
from pushcore.converter import DismissedEventView, InboxEntryView, ReadEventView
from pushcore.domain.errors import Unauthorized, ValidationError
from pushcore.services import tokens
from tests.live.conftest import LiveServer


def token(live: LiveServer, account: str = "alice", ttl: timedelta = timedelta(hours=1)) -> str:
    return live.services.tokens.issue(account, ttl)


def end_every_channel(live: LiveServer) -> None:
    """Close every open channel from the server's side (as a slow client's would be)."""
    hub = live.services.live
    for channels in tuple(hub._channels.values()):
        for channel in tuple(channels):
            loop = hub._loop
            assert loop is not None
            loop.call_soon_threadsafe(channel.end, "slow")


def test_list_read_and_dismiss(live: LiveServer) -> None:
    for title in ("one", "two", "three"):
        live.notify("alice", title)
    with Client(live.base, token=token(live)) as client:
        deadline = 50
        while len(list(client.inbox.list())) < 3 and deadline:
            threading.Event().wait(0.1)
            deadline -= 1
        entries = list(client.inbox.list())
        assert [e.title for e in entries] == ["three", "two", "one"]
        assert client.inbox.read(ids=[entries[2].id]).unread == 2
        assert [e.title for e in client.inbox.list(unread=True)] == ["three", "two"]
        assert client.inbox.read(up_to=entries[0].id).unread == 0
        assert client.inbox.dismiss(entries[1].id).id == entries[1].id
        assert [e.title for e in client.inbox.list()] == ["three", "one"]


def test_read_with_no_argument_reads_every_entry(live: LiveServer) -> None:
    for title in ("one", "two"):
        live.notify("bob", title)
    with Client(live.base, token=token(live, "bob")) as client:
        wait_for(lambda: len(list(client.inbox.list())) == 2)
        assert client.inbox.read().unread == 0
        assert list(client.inbox.list(unread=True)) == []
    with Client(live.base, token=token(live, "carol")) as empty:
        assert empty.inbox.read().unread == 0  # nothing there, nothing asked of the server


def test_async_read_with_no_argument_reads_every_entry(live: LiveServer) -> None:
    live.notify("dave", "one")

    async def scenario() -> tuple[int, int]:
        async with AsyncClient(live.base, token=token(live, "dave")) as client:
            while not [e async for e in client.inbox.list()]:
                await asyncio.sleep(0.05)
            unread = (await client.inbox.read()).unread
            return unread, len([e async for e in client.inbox.list(unread=True)])

    assert asyncio.run(asyncio.wait_for(scenario(), 10)) == (0, 0)


def test_a_validation_error_names_the_clients_arguments(live: LiveServer) -> None:
    with Client(live.base, token=token(live)) as client, pytest.raises(ValidationError) as info:
        client.inbox.read(up_to="not-an-entry")
    assert [d.field for d in info.value.details] == ["up_to"]
    assert info.value.message == "Invalid request: up_to"


def test_events_resume_after_the_server_ends_the_channel(live: LiveServer) -> None:
    received: list[object] = []
    stop = threading.Event()

    def follow() -> None:
        with Client(live.base, token=token(live)) as client:
            for event in client.inbox.events():
                received.append(event)
                if stop.is_set():
                    return

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    wait_for_channels(live, 1)
    live.notify("alice", "one")
    wait_for(lambda: len(received) == 1)
    end_every_channel(live)
    live.notify("alice", "two")  # sent while the client is away or coming back
    wait_for_channels(live, 1)
    live.notify("alice", "three")
    wait_for(lambda: len(received) >= 3)
    entries = [e for e in received if isinstance(e, InboxEntryView)]
    assert [e.title for e in entries] == ["one", "two", "three"]
    stop.set()
    live.notify("alice", "four")  # lets the loop see the stop
    thread.join(10)


def test_async_events_carry_reads_and_dismissals(live: LiveServer) -> None:
    async def scenario() -> list[object]:
        async with AsyncClient(live.base, token=token(live)) as client:
            events = client.inbox.events()
            first = asyncio.ensure_future(anext(events))
            await asyncio.to_thread(wait_for_channels, live, 1)
            await asyncio.to_thread(live.notify, "alice", "one")
            entry = await asyncio.wait_for(first, 10)
            assert isinstance(entry, InboxEntryView)
            await client.inbox.read(ids=[entry.id])
            read = await asyncio.wait_for(anext(events), 10)
            await client.inbox.dismiss(entry.id)
            dismissed = await asyncio.wait_for(anext(events), 10)
            await events.aclose()
            return [entry, read, dismissed]

    entry, read, dismissed = asyncio.run(scenario())
    assert isinstance(read, ReadEventView)
    assert isinstance(entry, InboxEntryView)
    assert read.ids == (entry.id,)
    assert read.unread == 0
    assert isinstance(dismissed, DismissedEventView)
    assert dismissed.id == entry.id


def test_events_raise_once_the_credential_is_refused(
    live: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The channel ends at the token's expiry, but the server accepts the token for
    # CLOCK_LEEWAY_SECONDS (30) more: each resume opens a channel that ends at once, until
    # the refusal. A second of leeway makes that refusal come ~30 s sooner, with the same
    # steps (a channel, its end at expiry, resumes accepted, then a 401); the verifier
    # reads the constant when it first checks a token, after the fixture's start.
    monkeypatch.setattr(tokens, "CLOCK_LEEWAY_SECONDS", 1)
    with (
        Client(live.base, token=token(live, ttl=timedelta(seconds=1))) as client,
        pytest.raises(Unauthorized, match="Token expired"),
    ):
        for _ in client.inbox.events():
            pass


def wait_for(condition: object, timeout: float = 10.0) -> None:
    assert callable(condition)
    done = threading.Event()
    for _ in range(int(timeout / 0.05)):
        if condition():
            return
        done.wait(0.05)
    raise AssertionError("condition not met")


def wait_for_channels(live: LiveServer, count: int) -> None:
    wait_for(lambda: live.services.live.open_channels == count)
