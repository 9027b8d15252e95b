"""The HTTP client of pushcore: :class:`Client` and :class:`AsyncClient` on httpx.

Answers are read into the same views the server writes its JSON from
(``pushcore.converter``), and error answers raise the library's own
exception tree.
"""

from pushcore.client._client import AsyncClient, Client
from pushcore.client._session import Session, Tokens

__all__ = ["AsyncClient", "Client", "Session", "Tokens"]
