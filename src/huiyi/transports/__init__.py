"""Transports: how a request reaches the core."""
