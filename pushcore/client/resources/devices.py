"""client.devices: the account's devices (a user token, or a key with devices:*)."""

from __future__ import annotations

from collections.abc import Mapping

from pushcore.client._call import Auth, Call, json_body, many, one, path
from pushcore.client._resource import Resource, S_co, endpoint
from pushcore.converter import DeletedView, DeviceView, RegisteredDeviceView
from pushcore.domain.model import Platform, WebPushKeys


def register(
    platform: Platform | str,
    token: str,
    *,
    name: str | None = None,
    keys: WebPushKeys | Mapping[str, str] | None = None,
) -> Call[RegisteredDeviceView]:
    """Register a device (again: the same token updates and reactivates it); a webhook
    device's answer has its signing ``secret``, shown only here."""
    data = json_body(platform=str(platform), token=token, name=name, keys=keys)
    return Call("POST", "/api/devices", Auth.EITHER, one(RegisteredDeviceView), data)


def list_() -> Call[list[DeviceView]]:
    """Every device of the account, deactivated ones included."""
    return Call("GET", "/api/devices", Auth.EITHER, many(DeviceView))


def remove(device_id: str) -> Call[DeletedView]:
    """Remove a device; it receives nothing more."""
    return Call("DELETE", path("/api/devices/{}", device_id), Auth.EITHER, one(DeletedView))


class Devices(Resource[S_co]):
    """``client.devices`` (its methods awaitable on AsyncClient)"""

    register = endpoint(register)
    list = endpoint(list_)
    remove = endpoint(remove)
