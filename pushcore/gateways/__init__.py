"""Gateways behind the Gateway port: APNs (HTTP/2), FCM, Web Push and webhooks, and the
log gateway standing in for a platform without credentials. Webhooks and Web Push share
their connections fairly by host and account (lanes.py)."""
