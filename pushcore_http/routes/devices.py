"""/api/devices: register (idempotent), list and remove devices (JWT or a devices:* key)."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.endpoints import HTTPEndpoint
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from pushcore.converter import DeletedView, DeviceView, RegisteredDeviceView, structure_request
from pushcore.domain.inputs import NewDevice
from pushcore.domain.scopes import Scope
from pushcore_http.auth import Accepts, authenticated, served
from pushcore_http.body import read_json
from pushcore_http.routes import view_response


class Devices(HTTPEndpoint):
    """/api/devices"""

    @authenticated(Accepts.EITHER, Scope.DEVICES_WRITE)
    async def post(self, request: Request) -> Response:
        """Register: 201 when new, 200 when the token was already registered."""
        services, caller = served(request)
        new = structure_request(NewDevice, await read_json(request))
        result = await run_in_threadpool(services.devices.register, caller.account_id, new)
        view = RegisteredDeviceView.registered(result.device, result.secret)
        return view_response(view, 201 if result.created else 200)

    @authenticated(Accepts.EITHER, Scope.DEVICES_READ)
    async def get(self, request: Request) -> Response:
        """The caller's devices, deactivated ones included."""
        services, caller = served(request)
        devices = await run_in_threadpool(services.devices.list, caller.account_id)
        return view_response([DeviceView.of(d) for d in devices])


class Device(HTTPEndpoint):
    """/api/devices/:id"""

    @authenticated(Accepts.EITHER, Scope.DEVICES_WRITE)
    async def delete(self, request: Request) -> Response:
        """Remove a device."""
        services, caller = served(request)
        device_id = request.path_params["device_id"]
        await run_in_threadpool(services.devices.remove, caller.account_id, device_id)
        return view_response(DeletedView.of(device_id))


routes = [Route("/api/devices", Devices), Route("/api/devices/{device_id}", Device)]
