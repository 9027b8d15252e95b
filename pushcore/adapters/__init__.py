"""Production adapters of the small ports: the clock, ids and randomness (``system``),
the SSRF guard (``net``), the icon check (``icons``) and Prometheus metrics (``metrics``).

Gateways and storage, the large adapters, have packages of their own.
"""
