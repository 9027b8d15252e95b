"""Live channels of the inbox: the hub that brings new entries to open channels, and
what one channel sends (:mod:`pushcore.live.stream`)."""

from pushcore.live.hub import Channel, LiveHub, LiveLimits

__all__ = ["Channel", "LiveHub", "LiveLimits"]
