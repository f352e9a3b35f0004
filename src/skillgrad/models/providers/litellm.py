"""``provider: litellm``: Gemini, Bedrock, Vertex, Mistral and the rest through LiteLLM
(``skillgrad[litellm]``).

One provider, one file: it declares its options and abilities; the wire is ``litellm.py``.
"""

from __future__ import annotations

from skillgrad.models.litellm import LiteLLMBackend
from skillgrad.models.registry import REMOTE_OPTIONS, Provider

PROVIDER = Provider(
    name="litellm",
    build=LiteLLMBackend,
    remote=True,
    options=("base_url", "api_key_env", *REMOTE_OPTIONS),
    extra="litellm",
    summary="LiteLLM's acompletion: Gemini, Bedrock, Vertex, Mistral and the rest",
)

__all__ = ["PROVIDER"]
