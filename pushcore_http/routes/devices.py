"""/api/devices: register (idempotent), list and remove devices (JWT or a devices:* key)."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from pushcore.converter import (
    DeletedView,
    DeviceView,
    RegisteredDeviceView,
    json_schema,
    structure_request,
)
from pushcore.domain.inputs import APNS_TOKEN, NewDevice
from pushcore.domain.scopes import Scope
from pushcore_http.answers import answer, listing, removal
from pushcore_http.auth import either, served
from pushcore_http.body import read_json
from pushcore_http.endpoints import Endpoints
from pushcore_http.routes import view_response

_IOS = "For `ios`: hex digits, an even number, at least 32 (the APNs token)."
_TOKEN = {"pattern": f"^{APNS_TOKEN.pattern}$", "description": _IOS}
_IF_IOS = {"if": {"properties": {"platform": {"const": "ios"}}}}
# A registration, with what an iOS token must be (a rule across two fields).
routes = Endpoints(
    "Devices",
    {
        "NewDevice": json_schema(NewDevice)
        | {"allOf": [_IF_IOS | {"then": {"properties": {"token": _TOKEN}}}]}
    },
)


@routes.post(
    "/api/devices",
    "Register a device",
    either(Scope.DEVICES_WRITE),
    answer(201, "A new device.", RegisteredDeviceView)
    | answer(200, "Already registered: the same device.", RegisteredDeviceView),
    "An idempotent upsert by token: 201 for a new device, 200 when the account already "
    "has the token (its name and keys are refreshed and it is reactivated). "
    "Notifications waiting for a device are queued for it. A webhook device gets a new "
    "signing `secret` each time (shown only in this answer).",
    body=NewDevice,
)
async def register(request: Request) -> Response:
    """Register: 201 when new, 200 when the token was already registered."""
    services, caller = served(request)
    new = structure_request(NewDevice, await read_json(request))
    result = await run_in_threadpool(services.devices.register, caller.account_id, new)
    view = RegisteredDeviceView.registered(result.device, result.secret)
    return view_response(view, 201 if result.created else 200)


@routes.get(
    "/api/devices",
    "List devices",
    either(Scope.DEVICES_READ),
    listing("devices", DeviceView),
    "Newest first, deactivated ones included.",
)
async def list_devices(request: Request) -> Response:
    """The caller's devices, deactivated ones included."""
    services, caller = served(request)
    devices = await run_in_threadpool(services.devices.list, caller.account_id)
    return view_response([DeviceView.of(d) for d in devices])


@routes.delete(
    "/api/devices/{device_id}",
    "Remove a device",
    either(Scope.DEVICES_WRITE),
    removal("device"),
    "The device is gone; registering its token again is a 201.",
)
async def remove(request: Request) -> Response:
    """Remove a device."""
    services, caller = served(request)
    device_id = request.path_params["device_id"]
    await run_in_threadpool(services.devices.remove, caller.account_id, device_id)
    return view_response(DeletedView.of(device_id))
