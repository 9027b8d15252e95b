"""StreamService as a library: create (codes, plan limits), subscribe, look up, send, delete."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from pushcore import (
    AlreadySubscribed,
    Conflict,
    Forbidden,
    NewStream,
    NotFound,
    NotificationStatus,
    OwnStream,
    Plan,
    PlanLimit,
    Services,
    StreamSend,
    ValidationError,
)
from pushcore.domain.codes import WORDS
from tests.fakes.clock import FakeClock
from tests.fakes.icons import FakeIconProbe
from tests.services.conftest import (
    ALICE,
    BOB,
    CAROL,
    T0,
    ScriptedRandom,
    android,
    make_services,
    stored,
)

CODE = re.compile(r"[a-z]+-[a-hj-km-np-z2-9]{4}")  # no 0 o 1 l i in the suffix


def stream(services: Services, account: str = ALICE, name: str = "Deploys", **fields: str) -> str:
    """Create a stream; its id."""
    return asyncio.run(services.streams.create(account, NewStream(name=name, **fields))).stream.id


def code_of(services: Services, stream_id: str, account: str = ALICE) -> str:
    """The code of one of the account's streams, as listed."""
    (found,) = [v for v in services.streams.list(account) if v.stream.id == stream_id]
    return found.stream.code


# -- create ----------------------------------------------------------------


def test_create_returns_the_stream_with_a_code_and_no_subscribers(services: Services) -> None:
    created = asyncio.run(services.streams.create(ALICE, NewStream(name="Deploys")))

    assert created.subscribers == 0
    s = created.stream
    assert s.id.startswith("str_")
    assert (s.account_id, s.name, s.description, s.icon_url) == (ALICE, "Deploys", "", None)
    assert s.created_at == T0
    assert CODE.fullmatch(s.code)
    assert s.code.split("-")[0] in WORDS
    assert services.streams.list(ALICE) == [created]


def test_description_and_icon_are_kept(services: Services, icons: FakeIconProbe) -> None:
    icon = "https://example.com/rocket.png"
    created = asyncio.run(
        services.streams.create(
            ALICE, NewStream(name="Deploys", description="Every production deploy", icon_url=icon)
        )
    )
    assert (created.stream.description, created.stream.icon_url) == (
        "Every production deploy",
        icon,
    )
    assert icons.checked == [icon]


def test_an_icon_that_is_not_an_image_is_refused_and_nothing_created(services: Services) -> None:
    with pytest.raises(ValidationError) as info:
        asyncio.run(
            services.streams.create(
                ALICE, NewStream(name="x", icon_url="https://example.com/a.svg")
            )
        )
    assert [d.field for d in info.value.details] == ["iconUrl"]
    assert services.streams.list(ALICE) == []


@pytest.mark.parametrize(
    "fields",
    [
        {"name": ""},
        {"name": " "},
        {"name": "x" * 51},
        {"name": "ok", "description": "x" * 201},
        {"name": "ok", "icon_url": "not a url"},
    ],
)
def test_an_invalid_stream_is_a_value_error_when_built(fields: dict[str, str]) -> None:
    with pytest.raises(ValueError):  # noqa: PT011  (each case has its own message)
        NewStream(**fields)


def test_codes_come_from_the_injected_randomness(
    tmp_path: Path, clock: FakeClock, icons: FakeIconProbe
) -> None:
    # word index, then 4 suffix indexes: the code is a function of the draws.
    draws = [5, 0, 1, 2, 30]
    services = make_services(tmp_path, clock, icons, random=ScriptedRandom(draws))
    try:
        created = asyncio.run(services.streams.create(ALICE, NewStream(name="Deploys"))).stream
    finally:
        services.close()
    assert created.code == f"{WORDS[5]}-abc9"


def test_a_code_already_taken_is_drawn_again(
    tmp_path: Path, clock: FakeClock, icons: FakeIconProbe
) -> None:
    same = [7, 1, 1, 1, 1]
    draws = same + same + [8, 2, 2, 2, 2]  # the second stream draws the first's code first
    services = make_services(tmp_path, clock, icons, random=ScriptedRandom(draws))
    try:
        first = asyncio.run(services.streams.create(ALICE, NewStream(name="one"))).stream
        second = asyncio.run(services.streams.create(BOB, NewStream(name="two"))).stream
        listed = [v.stream for v in services.streams.list(BOB)]
    finally:
        services.close()
    assert first.code == f"{WORDS[7]}-bbbb"
    assert second.code == f"{WORDS[8]}-cccc"
    assert listed == [second]


def test_seeded_randomness_gives_the_same_codes(
    tmp_path: Path, clock: FakeClock, icons: FakeIconProbe
) -> None:
    codes = []
    for run in ("a", "b"):
        services = make_services(tmp_path / run, clock, icons)  # SeededRandom(17) each time
        try:
            codes.append([code_of(services, stream(services, name=f"s{i}")) for i in range(3)])
        finally:
            services.close()
    assert codes[0] == codes[1]
    assert len(set(codes[0])) == 3


# -- plan limits -----------------------------------------------------------


def test_the_free_plan_holds_three_streams(services: Services) -> None:
    for i in range(3):
        stream(services, name=f"s{i}")

    with pytest.raises(PlanLimit) as info:
        stream(services, name="fourth")

    assert isinstance(info.value, Forbidden)
    assert info.value.code == "plan_limit"
    assert len(services.streams.list(ALICE)) == 3
    stream(services, BOB)  # another account's limit is its own


def test_deleting_a_stream_frees_its_slot(services: Services) -> None:
    ids = [stream(services, name=f"s{i}") for i in range(3)]
    services.streams.delete(ALICE, ids[0])

    stream(services, name="again")

    assert len(services.streams.list(ALICE)) == 3
    with pytest.raises(PlanLimit):
        stream(services, name="one too many")


def test_the_pro_plan_has_no_stream_limit(services: Services) -> None:
    account = services.accounts.set_plan(ALICE, Plan.PRO)
    assert account.plan is Plan.PRO

    for i in range(6):
        stream(services, name=f"s{i}")

    assert len(services.streams.list(ALICE)) == 6


def test_back_on_the_free_plan_no_new_stream_past_three(services: Services) -> None:
    services.accounts.set_plan(ALICE, Plan.PRO)
    for i in range(4):
        stream(services, name=f"s{i}")
    services.accounts.set_plan(ALICE, Plan.FREE)

    with pytest.raises(PlanLimit):
        stream(services, name="s4")
    assert len(services.streams.list(ALICE)) == 4  # nothing taken away


# -- list and delete -------------------------------------------------------


def test_list_is_the_callers_streams_newest_first(services: Services) -> None:
    older = stream(services, name="older")
    newer = stream(services, name="newer")
    stream(services, BOB, name="bob's")

    assert [v.stream.id for v in services.streams.list(ALICE)] == [newer, older]
    assert services.streams.list(CAROL) == []


def test_delete_another_accounts_stream_is_not_found(services: Services) -> None:
    mine = stream(services)

    with pytest.raises(NotFound):
        services.streams.delete(BOB, mine)
    with pytest.raises(NotFound):
        services.streams.delete(ALICE, "str_01JD0000000000000000000000")

    assert [v.stream.id for v in services.streams.list(ALICE)] == [mine]


def test_a_deleted_stream_is_gone_with_its_subscriptions(services: Services) -> None:
    sid = stream(services)
    code = code_of(services, sid)
    services.streams.subscribe(BOB, code)

    services.streams.delete(ALICE, sid)

    assert services.streams.list(ALICE) == []
    assert services.streams.subscriptions(BOB) == []
    with pytest.raises(NotFound):
        services.streams.lookup(BOB, code)
    with pytest.raises(NotFound):
        services.streams.subscribe(CAROL, code)
    with pytest.raises(NotFound):
        asyncio.run(services.streams.send(ALICE, sid, StreamSend(title="t")))
    with pytest.raises(NotFound):
        services.streams.delete(ALICE, sid)


def test_what_was_sent_to_a_deleted_stream_keeps_its_history(services: Services) -> None:
    sid = stream(services)
    code = code_of(services, sid)
    services.streams.subscribe(BOB, code)
    android(services, BOB, "b1")
    sent = asyncio.run(services.streams.send(ALICE, sid, StreamSend(title="t"))).notification

    services.streams.delete(ALICE, sid)

    got = stored(services, sent)
    assert got.stream is not None
    assert (got.stream.id, got.stream.code) == (sid, code)
    assert services.notifications.get(ALICE, sent.id).deliveries.pending == 1


# -- subscribe, subscriptions, lookup -------------------------------------


def test_subscribe_by_code(services: Services) -> None:
    sid = stream(services, description="Every deploy")
    code = code_of(services, sid)

    subscription, view = services.streams.subscribe(BOB, code)

    assert subscription.id.startswith("sub_")
    assert (subscription.account_id, subscription.stream_id) == (BOB, sid)
    assert subscription.created_at == T0
    assert view.stream.id == sid
    assert view.subscribers == 1
    assert services.streams.subscriptions(BOB) == [(subscription, view)]
    assert services.streams.list(ALICE)[0].subscribers == 1


def test_the_code_is_read_case_and_space_insensitively(services: Services) -> None:
    code = code_of(services, stream(services))
    _, view = services.streams.subscribe(BOB, f"  {code.upper()} ")
    assert view.stream.code == code


def test_subscribing_to_an_unknown_code_is_not_found(services: Services) -> None:
    with pytest.raises(NotFound) as info:
        services.streams.subscribe(BOB, "falcon-7k2q")
    assert info.value.message == "No stream has this code"


def test_the_creator_cannot_subscribe_to_their_own_stream(services: Services) -> None:
    code = code_of(services, stream(services))

    with pytest.raises(OwnStream) as info:
        services.streams.subscribe(ALICE, code)

    assert isinstance(info.value, Forbidden)
    assert info.value.code == "own_stream"
    assert services.streams.subscriptions(ALICE) == []
    assert services.streams.list(ALICE)[0].subscribers == 0


def test_subscribing_twice_is_already_subscribed(services: Services) -> None:
    code = code_of(services, stream(services))
    services.streams.subscribe(BOB, code)

    with pytest.raises(AlreadySubscribed) as info:
        services.streams.subscribe(BOB, code)

    assert isinstance(info.value, Conflict)
    assert info.value.code == "already_subscribed"
    assert len(services.streams.subscriptions(BOB)) == 1
    assert services.streams.list(ALICE)[0].subscribers == 1


def test_subscriptions_are_newest_first_with_live_counts(services: Services) -> None:
    first = code_of(services, stream(services, name="first"))
    second = code_of(services, stream(services, name="second"))
    services.streams.subscribe(BOB, first)
    services.streams.subscribe(BOB, second)
    services.streams.subscribe(CAROL, first)

    listed = services.streams.subscriptions(BOB)

    assert [(v.stream.name, v.subscribers) for _, v in listed] == [("second", 1), ("first", 2)]


def test_unsubscribe(services: Services) -> None:
    code = code_of(services, stream(services))
    subscription, _ = services.streams.subscribe(BOB, code)

    with pytest.raises(NotFound):
        services.streams.unsubscribe(CAROL, subscription.id)  # not carol's
    services.streams.unsubscribe(BOB, subscription.id)

    assert services.streams.subscriptions(BOB) == []
    assert services.streams.list(ALICE)[0].subscribers == 0
    with pytest.raises(NotFound):
        services.streams.unsubscribe(BOB, subscription.id)
    services.streams.subscribe(BOB, code)  # and back again


def test_lookup_says_whether_the_caller_subscribes(services: Services) -> None:
    sid = stream(services, description="Every deploy")
    code = code_of(services, sid)
    services.streams.subscribe(BOB, code)

    for_bob = services.streams.lookup(BOB, code)
    for_carol = services.streams.lookup(CAROL, code.upper())

    assert for_bob.is_subscribed is True
    assert for_carol.is_subscribed is False
    assert for_bob.stream == for_carol.stream
    assert (for_bob.stream.stream.id, for_bob.stream.subscribers) == (sid, 1)
    assert for_bob.stream.stream.description == "Every deploy"
    with pytest.raises(NotFound):
        services.streams.lookup(BOB, "nothing-here")


# -- send ------------------------------------------------------------------


def test_send_fans_out_to_every_active_device_of_every_subscriber(services: Services) -> None:
    sid = stream(services)
    code = code_of(services, sid)
    for account, tokens in ((BOB, ["b1", "b2"]), (CAROL, ["c1"]), ("dave", [])):
        services.streams.subscribe(account, code)
        for token in tokens:
            android(services, account, token)
    android(services, ALICE, "alice-own")  # the publisher's own devices get nothing
    android(services, "erin", "e1")  # not a subscriber

    result = asyncio.run(services.streams.send(ALICE, sid, StreamSend(title="Release 2.4")))

    assert (result.sent, result.subscribers) == (3, 3)
    assert result.stream.id == sid
    n = result.notification
    assert n.devices_targeted == 3
    assert n.status is NotificationStatus.QUEUED
    assert n.scheduled_at == T0  # immediate
    assert services.notifications.get(ALICE, n.id).deliveries.pending == 3


def test_a_send_is_a_notification_of_the_creator_labelled_with_the_stream(
    services: Services,
) -> None:
    sid = stream(services, icon_url="https://example.com/rocket.png")
    code = code_of(services, sid)
    services.streams.subscribe(BOB, code)
    android(services, BOB, "b1")

    result = asyncio.run(
        services.streams.send(ALICE, sid, StreamSend(title="Release 2.4", body="notes"))
    )

    got = stored(services, result.notification)
    assert got == result.notification
    assert (got.title, got.body, got.metadata) == ("Release 2.4", "notes", {})
    assert got.stream is not None
    assert (got.stream.id, got.stream.name, got.stream.code) == (sid, "Deploys", code)
    # The stream's name and icon are the sender's by default.
    assert (got.sender_name, got.sender_icon) == ("Deploys", "https://example.com/rocket.png")
    assert [n.id for n in services.notifications.list(ALICE).items] == [got.id]
    assert services.notifications.list(BOB).items == []  # not the subscriber's
    assert services.notifications.stats(ALICE).created_24h == 1


def test_sender_name_and_icon_given_win_over_the_streams(services: Services) -> None:
    sid = stream(services, icon_url="https://example.com/rocket.png")
    result = asyncio.run(
        services.streams.send(
            ALICE,
            sid,
            StreamSend(title="t", sender_name="CI", sender_icon="https://example.com/ci.png"),
        )
    )
    got = stored(services, result.notification)
    assert (got.sender_name, got.sender_icon) == ("CI", "https://example.com/ci.png")


def test_a_send_that_reaches_no_device_fails_at_once(services: Services) -> None:
    sid = stream(services)
    services.streams.subscribe(BOB, code_of(services, sid))  # bob has no device

    result = asyncio.run(services.streams.send(ALICE, sid, StreamSend(title="Anyone?")))

    assert (result.sent, result.subscribers) == (0, 1)
    got = stored(services, result.notification)
    assert got.status is NotificationStatus.FAILED
    assert got.failure_reason == "no_devices"
    assert result.notification == got
    assert services.notifications.stats(ALICE).by_status["FAILED"] == 1


def test_an_unsubscribed_account_is_not_sent_to(services: Services) -> None:
    sid = stream(services)
    code = code_of(services, sid)
    gone, _ = services.streams.subscribe(BOB, code)
    services.streams.subscribe(CAROL, code)
    android(services, BOB, "b1")
    android(services, CAROL, "c1")
    services.streams.unsubscribe(BOB, gone.id)

    result = asyncio.run(services.streams.send(ALICE, sid, StreamSend(title="t")))

    assert (result.sent, result.subscribers) == (1, 1)


def test_send_to_another_accounts_stream_is_not_found(services: Services) -> None:
    sid = stream(services)
    with pytest.raises(NotFound):
        asyncio.run(services.streams.send(BOB, sid, StreamSend(title="not mine")))
    assert services.notifications.stats(BOB).total == 0
    assert services.notifications.stats(ALICE).total == 0


def test_a_sender_icon_that_is_not_an_image_refuses_the_send(services: Services) -> None:
    sid = stream(services)
    with pytest.raises(ValidationError) as info:
        asyncio.run(
            services.streams.send(
                ALICE, sid, StreamSend(title="t", sender_icon="https://example.com/x.gif")
            )
        )
    assert [d.field for d in info.value.details] == ["senderIcon"]
    assert services.notifications.stats(ALICE).total == 0
