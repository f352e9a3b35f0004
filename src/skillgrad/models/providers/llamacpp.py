"""``provider: llamacpp``: the embedded models, llama.cpp in process (``skillgrad[local]``).

One provider, one file: it declares its options and abilities; the wire is ``llamacpp.py``.
"""

from __future__ import annotations

from skillgrad.models.llamacpp import LlamaCppBackend, check
from skillgrad.models.registry import Provider

PROVIDER = Provider(
    name="llamacpp",
    build=LlamaCppBackend,
    remote=False,
    options=("model_path", "n_ctx", "n_threads", "temperature", "max_tokens"),
    extra="local",
    summary="llama.cpp in process on a catalog model (SmolLM2-135M by default) or any GGUF",
    check=check,
)

__all__ = ["PROVIDER"]
