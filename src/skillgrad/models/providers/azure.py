"""``provider: azure``: Azure OpenAI (API key, or Entra ID with skillgrad[azure]).

One provider, one file: it declares its options and abilities; the wire is ``openai.py``.
"""

from __future__ import annotations

from skillgrad.models.openai import wire_provider

PROVIDER = wire_provider(
    "azure",
    "Azure OpenAI (API key, or Entra ID with skillgrad[azure])",
    options=("azure_endpoint", "azure_deployment", "api_version", "api_key_env"),
    extra="azure",
)

__all__ = ["PROVIDER"]
