"""The delivery engine: a scheduler that claims due deliveries under leases and a
dispatcher that routes them to gateways and records the outcomes."""

from typing import TYPE_CHECKING

from pushcore._lazy import lazy_names

if TYPE_CHECKING:
    from pushcore.delivery.config import EngineConfig
    from pushcore.delivery.engine import DeliveryEngine

__all__ = ["DeliveryEngine", "EngineConfig"]

# Imported on first use: the event sender's own process imports modules of this
# package (delivery/event_process.py) and needs none of the engine (its gateways,
# aiohttp): that import was most of the process's start.
__getattr__ = lazy_names(
    __name__,
    {"DeliveryEngine": "pushcore.delivery.engine", "EngineConfig": "pushcore.delivery.config"},
)
