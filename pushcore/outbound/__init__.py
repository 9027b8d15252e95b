"""Reaching other hosts safely: the SSRF guard every URL the service fetches or
posts to goes through (``guard``: resolve once, refuse private addresses, pin
the connection to the checked address) and the sender icon check (``icons``).

Gateways post through the guard too; they live in :mod:`pushcore.gateways`.
"""
