"""``provider: openai_compatible``: any OpenAI-chat server at base_url (vLLM, Ollama,
llama.cpp server, OpenRouter).

One provider, one file: it declares its options and abilities; the wire is ``openai_wire.py``.
"""

from __future__ import annotations

from skillgrad.models.openai_wire import COMMON_OPTIONS, OpenAIChatBackend
from skillgrad.models.provider import Provider

PROVIDER = Provider(
    name="openai_compatible",
    build=OpenAIChatBackend.from_spec,
    remote=True,
    options=("base_url", "api_key_env", *COMMON_OPTIONS),
    extra=None,
    summary="any OpenAI-chat server at base_url: vLLM, Ollama, llama.cpp server, OpenRouter",
)

__all__ = ["PROVIDER"]
