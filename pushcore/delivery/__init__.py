"""The delivery engine: a scheduler that claims due deliveries under leases and a
dispatcher that routes them to gateways and records the outcomes."""

from pushcore.delivery.config import EngineConfig
from pushcore.delivery.engine import DeliveryEngine

__all__ = ["DeliveryEngine", "EngineConfig"]
