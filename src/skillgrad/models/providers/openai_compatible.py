"""``provider: openai_compatible``: any OpenAI-chat server at base_url (vLLM, Ollama,
llama.cpp server, OpenRouter).

One provider, one file: it declares its options and abilities; the wire is ``openai.py``.
"""

from __future__ import annotations

from skillgrad.models.openai import wire_provider

PROVIDER = wire_provider(
    "openai_compatible",
    "any OpenAI-chat server at base_url: vLLM, Ollama, llama.cpp server, OpenRouter",
)

__all__ = ["PROVIDER"]
