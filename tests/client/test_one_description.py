"""Client and AsyncClient are one description: the same resources, methods and signatures.

Each resource is one class whose attributes describe their calls
(``pushcore/client/_resource.py``); the client's sender decides whether a
method answers or is awaited. These checks hold whatever resource or method
is added next.
"""

from __future__ import annotations

import inspect
from typing import Any

import pushcore
from pushcore.client._resource import by_mode, listing

URL = "http://127.0.0.1:9"  # nothing is sent: only the methods are looked at


def resources(client: Any) -> dict[str, Any]:
    return {
        name: value
        for name, value in vars(client).items()
        if not name.startswith("_") and hasattr(value, "_sender")
    }


def methods(resource: Any) -> dict[str, Any]:
    names = [name for name in dir(type(resource)) if not name.startswith("_")]
    return {name: getattr(resource, name) for name in names}


def test_both_clients_have_the_same_resources_of_one_class_each() -> None:
    sync, asynchronous = resources(pushcore.Client(URL)), resources(pushcore.AsyncClient(URL))
    assert sorted(sync) == [
        "account",
        "devices",
        "events",
        "inbox",
        "keys",
        "notifications",
        "schedules",
        "streams",
        "webhooks",
    ]
    assert {n: type(r) for n, r in sync.items()} == {n: type(r) for n, r in asynchronous.items()}


def test_every_method_has_one_signature_and_is_awaitable_on_the_async_client() -> None:
    sync, asynchronous = resources(pushcore.Client(URL)), resources(pushcore.AsyncClient(URL))
    for name, resource in sync.items():
        for method_name, method in methods(resource).items():
            other = methods(asynchronous[name])[method_name]
            where = f"{name}.{method_name}"
            assert inspect.signature(method) == inspect.signature(other), where
            described = type(inspect.getattr_static(type(resource), method_name))
            if described is not by_mode:  # the live channel: its I/O loop, once per mode
                assert method.__doc__, where
                assert method.__doc__ == other.__doc__, where
            assert not inspect.iscoroutinefunction(method), where
            # Lists and the live channel iterate (async for); everything else is awaited.
            iterates = described in (listing, by_mode)
            assert inspect.iscoroutinefunction(other) is not iterates, where
