"""In-memory streams and subscriptions, with the SQLite store's semantics."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from pushcore.domain.model import Device, Stream, StreamView, Subscription

if TYPE_CHECKING:
    from pushcore.storage.memory import _Tables


class Streams:
    def __init__(self, t: _Tables) -> None:
        self._t = t

    def _view(self, stream: Stream) -> StreamView:
        count = sum(1 for s in self._t.subscriptions.values() if s.stream_id == stream.id)
        return StreamView(stream, count)

    def _live(self) -> list[Stream]:
        return [s for s in self._t.streams.values() if s.id not in self._t.deleted_streams]

    def add(self, stream: Stream) -> None:
        if stream.id in self._t.streams or any(
            s.code == stream.code for s in self._t.streams.values()
        ):
            raise KeyError(stream.code)
        self._t.streams[stream.id] = stream

    def get(self, account_id: str, stream_id: str) -> StreamView | None:
        found = [s for s in self._live() if s.id == stream_id and s.account_id == account_id]
        return self._view(found[0]) if found else None

    def by_code(self, code: str) -> StreamView | None:
        found = [s for s in self._live() if s.code == code]
        return self._view(found[0]) if found else None

    def list(self, account_id: str) -> Sequence[StreamView]:
        mine = sorted(
            (s for s in self._live() if s.account_id == account_id),
            key=lambda s: s.id,
            reverse=True,
        )
        return [self._view(s) for s in mine]

    def count(self, account_id: str) -> int:
        return sum(1 for s in self._live() if s.account_id == account_id)

    def delete(self, account_id: str, stream_id: str, at: datetime) -> bool:
        if self.get(account_id, stream_id) is None:
            return False
        self._t.deleted_streams[stream_id] = at
        for sub_id in [i for i, s in self._t.subscriptions.items() if s.stream_id == stream_id]:
            del self._t.subscriptions[sub_id]
        return True

    def subscriber_devices(self, stream_id: str) -> Sequence[Device]:
        accounts = {
            s.account_id for s in self._t.subscriptions.values() if s.stream_id == stream_id
        }
        return [d for d in self._t.devices.values() if d.account_id in accounts and d.is_active]


class Subscriptions:
    def __init__(self, t: _Tables) -> None:
        self._t = t

    def add(self, subscription: Subscription) -> None:
        if subscription.id in self._t.subscriptions or self.find(
            subscription.account_id, subscription.stream_id
        ):
            raise KeyError(subscription.stream_id)
        self._t.subscriptions[subscription.id] = subscription

    def get(self, account_id: str, subscription_id: str) -> Subscription | None:
        found = self._t.subscriptions.get(subscription_id)
        return found if found is not None and found.account_id == account_id else None

    def find(self, account_id: str, stream_id: str) -> Subscription | None:
        return next(
            (
                s
                for s in self._t.subscriptions.values()
                if s.account_id == account_id and s.stream_id == stream_id
            ),
            None,
        )

    def list(self, account_id: str) -> Sequence[tuple[Subscription, StreamView]]:
        streams = Streams(self._t)
        mine = sorted(
            (s for s in self._t.subscriptions.values() if s.account_id == account_id),
            key=lambda s: s.id,
            reverse=True,
        )
        result: list[tuple[Subscription, StreamView]] = []
        for sub in mine:
            stream = self._t.streams.get(sub.stream_id)
            if stream is not None and stream.id not in self._t.deleted_streams:
                result.append((sub, streams._view(stream)))
        return result

    def delete(self, account_id: str, subscription_id: str) -> bool:
        if self.get(account_id, subscription_id) is None:
            return False
        del self._t.subscriptions[subscription_id]
        return True
