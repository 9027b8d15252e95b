"""The delivery engine: a scheduler that claims due deliveries under leases and a
dispatcher that routes them to gateways and records the outcomes."""

from pushcore.delivery.engine import DeliveryEngine, EngineConfig

__all__ = ["DeliveryEngine", "EngineConfig"]
