"""The client tests' fixtures: the same real server (one per session), accounts and receivers."""

from tests.client.conftest import account, receiver, server

__all__ = ["account", "receiver", "server"]
