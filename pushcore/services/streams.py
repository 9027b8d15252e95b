"""Streams: create with a shareable code, subscribe by code, send to every subscriber."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from functools import partial
from typing import TypeVar

import anyio.to_thread
import attrs

from pushcore.consistency import reconcile
from pushcore.domain.codes import new_stream_code
from pushcore.domain.errors import (
    AlreadySubscribed,
    NotFound,
    OwnStream,
    PlanLimit,
    ValidationError,
)
from pushcore.domain.expiry import expires_at_of, expiry_errors
from pushcore.domain.inputs import NewStream, StreamSend
from pushcore.domain.localtime import deliver_at_errors, due_by_zone, earliest, latest
from pushcore.domain.model import (
    IconStyle,
    Notification,
    Plan,
    ScheduleRef,
    Stream,
    StreamRef,
    StreamView,
    Subscription,
)
from pushcore.domain.scheduling import FREE_PLAN_STREAMS
from pushcore.domain.states import NotificationStatus
from pushcore.ports import (
    Clock,
    IconProbe,
    IdGenerator,
    InboxSignal,
    Random,
    Store,
    Transaction,
    Waker,
)
from pushcore.services.collapse import supersede_older
from pushcore.services.icons import probe_icons

# Codes come from 2,048 words x 31^4 suffixes (~1.9e9); a handful of draws is
# plenty, and more would mean something is wrong with the randomness.
CODE_ATTEMPTS = 8

T = TypeVar("T")


async def _in_thread(blocking: Callable[[], T]) -> T:
    """Run a blocking store transaction off the event loop, so SQLite never blocks it.

    In anyio's worker threads, the bounded pool Starlette runs the HTTP
    adapter's other service calls in; not the loop's default executor, whose
    few threads (cores + 4) the gateways' DNS lookups use: a large fan-out
    must not delay deliveries.
    """
    return await anyio.to_thread.run_sync(blocking)


def send_in(
    tx: Transaction,
    notification_id: str,
    view: StreamView,
    request: StreamSend,
    now: datetime,
    schedule: ScheduleRef | None = None,
) -> tuple[Notification, int, int]:
    """Store a stream send in ``tx``, due ``now`` (or at each subscriber's local time): the
    notification, devices reached, inboxes."""
    stream = view.stream
    local = request.deliver_at
    dues = {} if local is None else due_by_zone(local, tx.local_times.stream_zones(stream.id), now)
    notification = Notification(
        id=notification_id,
        account_id=stream.account_id,
        title=request.title,
        body=request.body,
        icon_style=IconStyle.BOLT,
        sound=request.sound,
        priority=request.priority,
        delay="5s",
        custom_delay=None,
        target_device_token=None,
        metadata={},
        scheduled_at=earliest(dues, now) if dues else now,
        sender_name=request.sender_name or stream.name,
        sender_icon=request.sender_icon or stream.icon_url,
        status=NotificationStatus.QUEUED,
        created_at=now,
        devices_targeted=0,
        stream=StreamRef(stream.id, stream.name, stream.code),
        collapse_key=request.collapse_key,
        renotify=request.renotify,
        ttl=request.ttl,
        # A ttl counts from the last recipient's time: each gets at least that long.
        expires_at=expires_at_of(
            latest(dues, now) if dues else now, request.ttl, request.expires_at
        ),
        schedule=schedule,
        deliver_at=local,
    )
    tx.notifications.add(notification)
    supersede_older(tx, notification, now)
    if local is None:
        sent = tx.schedule.fan_out(notification, stream.id, now)
    else:
        sent = tx.local_times.fan_out(notification, stream.id, dues)
    notification = attrs.evolve(notification, devices_targeted=sent)
    tx.notifications.update(notification)
    if not sent:
        # Stream sends never wait for a device: nobody to reach is a failure now.
        (notification,) = reconcile(tx, [notification], now) or [notification]
    if local is not None:
        # Each subscriber's entry comes with its first delivery's time (the engine's claim).
        return notification, sent, 0
    # Due now, so in every subscriber's inbox now, devices or none; last, as
    # it holds the inbox's turn until COMMIT (storage/sql/inbox.py).
    inboxed = tx.inbox.fan_out(notification, stream.id, now)
    tx.inbox.replace_older([notification], now)
    return notification, sent, inboxed


@attrs.frozen
class SendResult:
    """What a stream send did."""

    notification: Notification
    sent: int
    subscribers: int
    stream: Stream


@attrs.frozen
class Lookup:
    """A stream found by code, and whether the caller subscribes to it."""

    stream: StreamView
    is_subscribed: bool


@attrs.define(slots=False, eq=False, repr=False)
class StreamService:
    """Use cases on streams and subscriptions."""

    _store: Store
    _clock: Clock
    _ids: IdGenerator
    _random: Random
    _icons: IconProbe
    _waker: Waker
    _inbox: InboxSignal

    async def create(self, account_id: str, request: NewStream) -> StreamView:
        """Create a stream with a fresh unique code, within the account's plan.

        The icon is checked on the event loop, as for a notification
        (ValidationError ``iconUrl``); the insert runs in a worker thread.
        """
        await self._refuse_bad_icons(account_id, {"iconUrl": request.icon_url})
        return await _in_thread(partial(self._insert, account_id, request))

    def _insert(self, account_id: str, request: NewStream) -> StreamView:
        """Insert the new stream under a code no stream has (blocking)."""
        for _ in range(CODE_ATTEMPTS):
            stream = Stream(
                id=self._ids.new_id("str"),
                account_id=account_id,
                name=request.name,
                code=new_stream_code(self._random.randbelow),
                description=request.description,
                icon_url=request.icon_url,
                created_at=self._clock.now(),
            )
            # Count and insert in one write transaction: two creates at once
            # are serialised, so the second sees the first and the limit holds.
            with self._store.transaction() as tx:
                account = tx.accounts.get(account_id)
                plan = account.plan if account is not None else Plan.FREE
                if plan is Plan.FREE:
                    tx.locks.plan_limits(account_id)
                    if tx.streams.count(account_id) >= FREE_PLAN_STREAMS:
                        raise PlanLimit(
                            f"The free plan allows {FREE_PLAN_STREAMS} streams;"
                            " delete one or move to the pro plan"
                        )
                try:
                    tx.streams.add(stream)
                except KeyError:
                    continue  # the code was taken: draw another
                return StreamView(stream, 0)
        raise RuntimeError("could not draw an unused stream code")

    async def _refuse_bad_icons(self, account_id: str, urls: Mapping[str, str | None]) -> None:
        """ValidationError naming each icon (field -> URL) that is not an image."""
        errors = await probe_icons(self._icons, account_id, urls)
        if errors:
            raise ValidationError(errors)

    def list(self, account_id: str) -> Sequence[StreamView]:
        """The account's streams, newest first."""
        with self._store.read() as tx:
            return tx.streams.list(account_id)

    def delete(self, account_id: str, stream_id: str) -> None:
        """Delete a stream and its subscriptions; sent notifications keep their history."""
        with self._store.transaction() as tx:
            if not tx.streams.delete(account_id, stream_id, self._clock.now()):
                raise NotFound("Stream not found")

    async def send(self, account_id: str, stream_id: str, request: StreamSend) -> SendResult:
        """One notification, one delivery per active device of every subscriber, now.

        The sender icon is checked on the event loop (ValidationError
        ``senderIcon``); the fan-out runs in a worker thread.
        """
        now = self._clock.now()
        errors = expiry_errors(now, request.ttl, request.expires_at)
        if request.deliver_at is not None:
            errors += deliver_at_errors(request.deliver_at, now)
        if errors:
            raise ValidationError(errors)
        await self._refuse_bad_icons(account_id, {"senderIcon": request.sender_icon})
        return await _in_thread(partial(self._fan_out, account_id, stream_id, request))

    def _fan_out(self, account_id: str, stream_id: str, request: StreamSend) -> SendResult:
        """Store the send's notification and a delivery per subscriber's device (blocking)."""
        now = self._clock.now()
        with self._store.transaction() as tx:
            view = tx.streams.get(account_id, stream_id)
            if view is None:
                raise NotFound("Stream not found")
            notification, sent, inboxed = send_in(tx, self._ids.new_id("ntf"), view, request, now)
        stream = view.stream
        if inboxed:
            self._inbox.committed()
        if sent:
            self._waker.wake(notification.scheduled_at)
        return SendResult(notification, sent, view.subscribers, stream)

    def subscribe(self, account_id: str, code: str) -> tuple[Subscription, StreamView]:
        """Subscribe the caller to the stream with ``code``."""
        with self._store.transaction() as tx:
            view = tx.streams.by_code(code.strip().lower())
            if view is None:
                raise NotFound("No stream has this code")
            if view.stream.account_id == account_id:
                raise OwnStream("You cannot subscribe to your own stream")
            subscription = Subscription(
                self._ids.new_id("sub"), account_id, view.stream.id, self._clock.now()
            )
            try:
                tx.subscriptions.add(subscription)
            except KeyError:
                raise AlreadySubscribed("You already subscribe to this stream") from None
            return subscription, attrs.evolve(view, subscribers=view.subscribers + 1)

    def subscriptions(self, account_id: str) -> Sequence[tuple[Subscription, StreamView]]:
        """The caller's subscriptions with their streams, newest first."""
        with self._store.read() as tx:
            return tx.subscriptions.list(account_id)

    def unsubscribe(self, account_id: str, subscription_id: str) -> None:
        """Remove one of the caller's subscriptions."""
        with self._store.transaction() as tx:
            if not tx.subscriptions.delete(account_id, subscription_id):
                raise NotFound("Subscription not found")

    def shared(self, code: str) -> Stream:
        """The stream with ``code``, for anyone holding its share link (no account)."""
        with self._store.read() as tx:
            view = tx.streams.by_code(code.strip().lower())
        if view is None:
            raise NotFound("No stream has this code")
        return view.stream

    def lookup(self, account_id: str, code: str) -> Lookup:
        """The stream with ``code``, and whether the caller subscribes to it."""
        with self._store.read() as tx:
            view = tx.streams.by_code(code.strip().lower())
            if view is None:
                raise NotFound("No stream has this code")
            mine = tx.subscriptions.find(account_id, view.stream.id)
        return Lookup(view, mine is not None)
