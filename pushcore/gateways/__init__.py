"""Gateways behind the Gateway port: webhook and log here; APNs, FCM and Web Push to come."""
