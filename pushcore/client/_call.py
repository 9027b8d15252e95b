"""A call of the API described as data: what to send, and how to read the answer.

Resources describe their calls once (``_resource.py``); the sync and the
async sender execute them. That keeps every endpoint's path, credential and
parsing in one place for :class:`~pushcore.Client` and :class:`~pushcore.AsyncClient`.
"""

from __future__ import annotations

import enum
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar
from urllib.parse import quote

import attrs

from pushcore.converter import View, camel, converter, from_json

if TYPE_CHECKING:
    # Only the senders' signatures name it: a call's body is built without httpx.
    import httpx

T = TypeVar("T")
# A call that answers a page of views answers a page: Paged[View] takes it (frozen, read only).
T_co = TypeVar("T_co", covariant=True)
V = TypeVar("V", bound=View)


class Auth(enum.Enum):
    """Which credential an endpoint takes (API.md "Authentication")."""

    KEY = "key"  # an API key
    USER = "user"  # a JWT
    EITHER = "either"  # either; the key is sent when the client has both
    NONE = "none"  # none: signing in (the body carries what proves who it is)


@attrs.frozen
class Call(Generic[T_co]):
    """One request to the API and the function that reads its JSON answer."""

    method: str
    path: str
    auth: Auth
    parse: Callable[[Any], T_co]
    json: Any = None
    params: Mapping[str, str] | None = None
    headers: Mapping[str, str] | None = None  # beside the credential (If-Match)


def one(cls: type[V]) -> Callable[[Any], V]:
    """A parser of a JSON object into the view ``cls``."""
    return lambda data: from_json(data, cls)


def many(cls: type[V]) -> Callable[[Any], list[V]]:
    """A parser of a JSON array of ``cls`` views."""

    def parse(data: Any) -> list[V]:
        if not isinstance(data, list):
            raise TypeError(f"expected a JSON array of {cls.__name__}")
        return [from_json(item, cls) for item in data]

    return parse


def path(template: str, *ids: str) -> str:
    """``template`` with each ``{}`` replaced by an id, escaped so it stays one segment."""
    return template.format(*(quote(i, safe="") for i in ids))


def patch_body(**fields: Any) -> dict[str, Any]:
    """A JSON merge patch: camelCase names, None kept (it clears the field)."""
    return {camel(k): _json_value(v) for k, v in fields.items()}


def _json_value(value: Any) -> Any:
    """A field's value as the API writes it: a mapping as given, an input object (a
    ``DeliverAt``) with its fields' API names."""
    if isinstance(value, Mapping):
        return converter.unstructure(dict(value))
    if attrs.has(type(value)):
        return {camel(k): v for k, v in converter.unstructure(value).items() if v is not None}
    return converter.unstructure(value)


def query(**fields: Any) -> dict[str, str]:
    """Query parameters: camelCase names, None left out, values as the API reads them."""
    values = {camel(k): converter.unstructure(v) for k, v in fields.items() if v is not None}
    # A flag as JSON writes it (true, false), not as Python does.
    return {k: json.dumps(v) if isinstance(v, bool) else str(v) for k, v in values.items()}


def json_body(**fields: Any) -> dict[str, Any]:
    """A JSON request body: camelCase names, None left out, values as the API writes them."""
    return {camel(k): _json_value(v) for k, v in fields.items() if v is not None}


class SyncSender(Protocol):
    """Runs a call and returns its result (the sync client's transport)."""

    def send(self, call: Call[T]) -> T:
        """The parsed answer, or the error tree's exception."""
        ...

    def open(self, call: Call[Any], headers: Mapping[str, str]) -> httpx.Response:
        """``call`` sent once with ``headers`` added, its answer streamed (close it)."""
        ...


class AsyncSender(Protocol):
    """Runs a call and returns its result (the async client's transport)."""

    async def send(self, call: Call[T]) -> T:
        """The parsed answer, or the error tree's exception."""
        ...

    async def open(self, call: Call[Any], headers: Mapping[str, str]) -> httpx.Response:
        """``call`` sent once with ``headers`` added, its answer streamed (close it)."""
        ...


Item_co = TypeVar("Item_co", covariant=True)
Item = TypeVar("Item")


class Paged(Protocol[Item_co]):
    """A page of a list: its items and the cursor of the next one."""

    @property
    def items(self) -> Sequence[Item_co]:
        """The page's items."""
        ...

    @property
    def next_cursor(self) -> str | None:
        """The next page's cursor; None on the last page."""
        ...


def every(fetch: Callable[[str | None], Paged[Item]]) -> Iterator[Item]:
    """Every item of a list, page after page (``fetch`` gets each page's cursor)."""
    cursor = None
    while True:
        found = fetch(cursor)
        yield from found.items
        if found.next_cursor is None:
            return
        cursor = found.next_cursor


async def every_async(fetch: Callable[[str | None], Awaitable[Paged[Item]]]) -> AsyncIterator[Item]:
    """:func:`every` for the async client."""
    cursor = None
    while True:
        found = await fetch(cursor)
        for item in found.items:
            yield item
        if found.next_cursor is None:
            return
        cursor = found.next_cursor
