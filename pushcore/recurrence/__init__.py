"""Adapters of the recurrence port (pushcore/ports/recurrence.py)."""
