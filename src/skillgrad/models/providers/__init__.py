"""Endpoints: one module per provider, each declaring one ``PROVIDER`` (where a model lives,
with which credentials and options) on a wire named for its protocol (``models/<wire>.py``).
Each is registered under the entry-point group ``skillgrad.providers``.
"""
