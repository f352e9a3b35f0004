"""``provider: azure``: Azure OpenAI (API key, or Entra ID with skillgrad[azure]).

One provider, one file: it declares its options and abilities; the wire is ``openai_wire.py``.
"""

from __future__ import annotations

from skillgrad.models.openai_wire import COMMON_OPTIONS, OpenAIChatBackend
from skillgrad.models.provider import Provider

PROVIDER = Provider(
    name="azure",
    build=OpenAIChatBackend.from_spec,
    remote=True,
    options=("azure_endpoint", "azure_deployment", "api_version", "api_key_env", *COMMON_OPTIONS),
    extra="azure",
    summary="Azure OpenAI (API key, or Entra ID with skillgrad[azure])",
)

__all__ = ["PROVIDER"]
