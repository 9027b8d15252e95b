"""Live channels of the inbox: the hub that brings new entries to open channels."""

from pushcore.live.hub import Channel, LiveHub, LiveLimits

__all__ = ["Channel", "LiveHub", "LiveLimits"]
