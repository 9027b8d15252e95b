"""The HTTP client of pushcore: :class:`Client` and :class:`AsyncClient` on httpx.

Answers are read into the same views the server writes its JSON from
(``pushcore.converter``), and error answers raise the library's own
exception tree.

The names are imported on first use (PEP 562): a module of this package that
builds no request (a call's JSON body, :mod:`pushcore.client._call`) loads
without httpx, for a local ``pushctl send`` (docs/benchmarks.md, "Quick start").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pushcore._lazy import lazy_names

if TYPE_CHECKING:
    from pushcore.client._client import AsyncClient, Client
    from pushcore.client._session import Session, Tokens

__all__ = ["AsyncClient", "Client", "Session", "Tokens"]

_HOMES = {
    "AsyncClient": "pushcore.client._client",
    "Client": "pushcore.client._client",
    "Session": "pushcore.client._session",
    "Tokens": "pushcore.client._session",
}


__getattr__ = lazy_names(__name__, _HOMES)
