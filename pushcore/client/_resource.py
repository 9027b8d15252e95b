"""One resource class for both clients: each attribute describes what it asks once.

A resource is made with the sender of :class:`~pushcore.Client` or of
:class:`~pushcore.AsyncClient`, and each attribute runs its description
with that sender: ``endpoint`` a :class:`Call`, ``listing`` a list read page
after page, ``steps`` a generator of calls (each answer sent back into it).
So a resource, its endpoints and their signatures are written once, and the
async client's methods are the sync ones, awaited. Type checkers see the
same: each descriptor's ``__get__`` answers by the resource's sender type.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from typing import Any, Concatenate, Generic, ParamSpec, Self, TypeVar, overload

import attrs

from pushcore.client._call import AsyncSender, Call, Paged, SyncSender, every, every_async

P = ParamSpec("P")
T = TypeVar("T")
Item = TypeVar("Item")
S_co = TypeVar("S_co", bound="SyncSender | AsyncSender", covariant=True)

Steps = Generator[Call[Any], Any, T]
"""Calls to make one after another, each answered by what the call returns; then a result."""


class Resource(Generic[S_co]):
    """A resource of a client; its methods send calls (and are awaitable on AsyncClient)."""

    def __init__(self, sender: S_co) -> None:
        self._sender = sender
        self._awaits = inspect.iscoroutinefunction(sender.send)


@attrs.frozen
class Pages(Generic[Item]):
    """A list read page after page: the call of the page after each cursor."""

    page: Callable[[str | None], Call[Paged[Item]]]


class _Described(Generic[P]):
    """A resource attribute: a description, run by the resource's sender when looked up."""

    def __init__(self, describe: Callable[P, Any]) -> None:
        self.describe = describe
        self.name = describe.__name__

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.name = name

    def _runner(self, resource: Resource[Any]) -> Callable[..., Any]:
        """The function that runs the description with the resource's sender."""
        raise NotImplementedError

    def _bind(self, resource: Resource[Any]) -> Callable[..., Any]:
        run = self._runner(resource)
        if inspect.iscoroutinefunction(run):

            async def awaited(*args: Any, **kwargs: Any) -> Any:
                return await run(*args, **kwargs)

            method: Any = awaited
        else:

            def plain(*args: Any, **kwargs: Any) -> Any:
                return run(*args, **kwargs)

            method = plain
        # help() and IDEs show the description's parameters, not its return type.
        functools.update_wrapper(method, self.describe)
        del method.__wrapped__
        signature = inspect.signature(self.describe)
        method.__signature__ = signature.replace(return_annotation=inspect.Signature.empty)
        method.__name__ = method.__qualname__ = self.name
        # Made once per resource: later lookups find it in the instance's dict.
        resource.__dict__[self.name] = method
        bound: Callable[..., Any] = method
        return bound


class _Answered(_Described[P], Generic[P, T]):
    """A method that returns ``T`` on the sync client and an awaitable of it on the async."""

    @overload
    def __get__(self, resource: None, owner: type[Any]) -> Self: ...
    @overload
    def __get__(self, resource: Resource[SyncSender], owner: type[Any]) -> Callable[P, T]: ...
    @overload
    def __get__(
        self, resource: Resource[AsyncSender], owner: type[Any]
    ) -> Callable[P, Awaitable[T]]: ...
    def __get__(self, resource: Resource[Any] | None, owner: type[Any]) -> Any:
        return self if resource is None else self._bind(resource)

    def _runner(self, resource: Resource[Any]) -> Callable[..., Any]:
        if resource._awaits:
            return functools.partial(self._async, resource._sender)
        return functools.partial(self._sync, resource._sender)

    def _sync(self, sender: SyncSender, *args: Any, **kwargs: Any) -> T:
        raise NotImplementedError

    async def _async(self, sender: AsyncSender, *args: Any, **kwargs: Any) -> T:
        raise NotImplementedError


class endpoint(_Answered[P, T]):
    """A method that sends the call its builder describes and returns the parsed answer."""

    def __init__(self, describe: Callable[P, Call[T]]) -> None:
        super().__init__(describe)
        self.build = describe

    def _sync(self, sender: SyncSender, *args: Any, **kwargs: Any) -> T:
        return sender.send(self.build(*args, **kwargs))

    async def _async(self, sender: AsyncSender, *args: Any, **kwargs: Any) -> T:
        return await sender.send(self.build(*args, **kwargs))


class steps(_Answered[P, T]):
    """A method that makes the calls its generator yields, in turn, and returns its result."""

    def __init__(self, describe: Callable[P, Steps[T]]) -> None:
        super().__init__(describe)
        self.calls = describe

    def _sync(self, sender: SyncSender, *args: Any, **kwargs: Any) -> T:
        calls = self.calls(*args, **kwargs)
        try:
            call = next(calls)
            while True:
                call = calls.send(sender.send(call))
        except StopIteration as done:
            result: T = done.value
            return result

    async def _async(self, sender: AsyncSender, *args: Any, **kwargs: Any) -> T:
        calls = self.calls(*args, **kwargs)
        try:
            call = next(calls)
            while True:
                call = calls.send(await sender.send(call))
        except StopIteration as done:
            result: T = done.value
            return result


class listing(_Described[P], Generic[P, Item]):
    """A method that iterates over every item of a list, fetching each page as it goes
    (an iterator on the sync client, an async iterator on the async one)."""

    def __init__(self, describe: Callable[P, Pages[Item]]) -> None:
        super().__init__(describe)
        self.pages = describe

    @overload
    def __get__(self, resource: None, owner: type[Any]) -> Self: ...
    @overload
    def __get__(
        self, resource: Resource[SyncSender], owner: type[Any]
    ) -> Callable[P, Iterator[Item]]: ...
    @overload
    def __get__(
        self, resource: Resource[AsyncSender], owner: type[Any]
    ) -> Callable[P, AsyncIterator[Item]]: ...
    def __get__(self, resource: Resource[Any] | None, owner: type[Any]) -> Any:
        return self if resource is None else self._bind(resource)

    def _runner(self, resource: Resource[Any]) -> Callable[..., Any]:
        sender: Any = resource._sender
        walk: Callable[[Any], Any] = every_async if resource._awaits else every

        def run(*args: P.args, **kwargs: P.kwargs) -> Any:
            pages = self.pages(*args, **kwargs)
            return walk(lambda cursor: sender.send(pages.page(cursor)))

        return run


Sync = TypeVar("Sync")
Async = TypeVar("Async")


class by_mode(Generic[P, Sync, Async]):
    """A method written for each sender, where the I/O itself differs (a stream's lines)."""

    def __init__(
        self,
        sync: Callable[Concatenate[SyncSender, P], Sync],
        asynchronous: Callable[Concatenate[AsyncSender, P], Async],
    ) -> None:
        self.sync = sync
        self.asynchronous = asynchronous

    @overload
    def __get__(self, resource: None, owner: type[Any]) -> Self: ...
    @overload
    def __get__(self, resource: Resource[SyncSender], owner: type[Any]) -> Callable[P, Sync]: ...
    @overload
    def __get__(self, resource: Resource[AsyncSender], owner: type[Any]) -> Callable[P, Async]: ...
    def __get__(self, resource: Resource[Any] | None, owner: type[Any]) -> Any:
        if resource is None:
            return self
        chosen: Callable[..., Any] = self.asynchronous if resource._awaits else self.sync
        sender = resource._sender

        @functools.wraps(chosen)
        def method(*args: Any, **kwargs: Any) -> Any:
            return chosen(sender, *args, **kwargs)

        del method.__wrapped__
        _, *rest = inspect.signature(chosen).parameters.values()
        method.__signature__ = inspect.Signature(rest)  # type: ignore[attr-defined]
        return method
