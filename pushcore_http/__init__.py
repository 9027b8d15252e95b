"""The HTTP front door: a thin Starlette adapter over pushcore's services."""

from pushcore_http.app import create_app

__all__ = ["create_app"]
