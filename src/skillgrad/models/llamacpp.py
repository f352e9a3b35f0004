"""The embedded models: llama.cpp in process (``llama-cpp-python``), on a local GGUF file.

``model`` names a catalog model (``skillgrad models list``; default the tiny SmolLM2-135M),
resolved to a verified file by ``models.catalog``; ``model_path`` runs any other GGUF as it is.
One ``Llama`` instance is not thread-safe, so its calls are serialised by a lock and run in a
worker thread; llama.cpp reuses the KV cache of the longest matching token prefix of the
previous prompt, so rollouts that share a skill (the system prompt) skip its prefill. Every call
holds one machine-wide CPU slot per thread it runs (``cpu_slots``): however many models, workers
and processes, the embedded models never run more threads than the machine has cores. Without
an explicit ``n_threads`` a call runs on as many cores as it finds free.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from skillgrad.errors import PermanentModelError
from skillgrad.models.catalog import Catalog
from skillgrad.models.spec import ModelSpec
from skillgrad.models.wrappers.cpu_slots import CpuSlots
from skillgrad.types import ChatRequest, Completion, Usage

INSTALL_HINT = (
    "pip install 'skillgrad[local]'  (llama-cpp-python compiles from source, ~13 min on 2 cores)"
)


def model_file(spec: ModelSpec, catalog: Catalog | None = None) -> Path:
    """The GGUF file ``spec`` names: ``model_path`` as given, else the catalog model ``model``
    (a verified copy; ``AssetError`` naming ``skillgrad models pull`` when it is not here)."""
    if spec.model_path:
        path = Path(spec.model_path).expanduser()
        if not path.is_file():
            raise PermanentModelError(
                f"models.<role>.model_path {path} is not a file; give the path of a GGUF file, "
                "or drop model_path and name a catalog model (skillgrad models list)"
            )
        return path
    return (catalog or Catalog.default()).require(spec.model)


def check(spec: ModelSpec) -> None:
    """Before a run: the model file is here and verified (no model is loaded)."""
    model_file(spec)


class LlamaCppBackend:
    """In-process llama.cpp backend on ``model_file(spec)``. Each call holds CPU slots and runs
    one thread per slot: ``spec.n_threads`` of them when set, else the free cores (at least
    one), so a lone model uses the whole machine and two models share it."""

    def __init__(
        self,
        spec: ModelSpec | None = None,
        catalog: Catalog | None = None,
        slots: CpuSlots | None = None,
    ) -> None:
        spec = spec or ModelSpec()
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise PermanentModelError(
                f"llama-cpp-python is not installed ({exc}). Run: {INSTALL_HINT}"
            ) from exc
        path = model_file(spec, catalog)
        self.name = spec.name
        self.spec = spec
        self._slots = slots or _slots()
        self.threads = spec.n_threads or self._slots.cores
        self._running = self.threads  # the thread count the context is set to
        self._lock = threading.Lock()
        self._llm = Llama(
            model_path=str(path),
            n_ctx=spec.n_ctx,
            # prompt processing too (llama-cpp-python's default for it is every CPU)
            n_threads=self.threads,
            n_threads_batch=self.threads,
            verbose=False,
            seed=0,
        )

    def _run_on(self, threads: int) -> None:
        """Set the threads of the next computation to the slots this call holds."""
        if threads != self._running:
            from llama_cpp import llama_set_n_threads

            llama_set_n_threads(self._llm.ctx, threads, threads)
            self._running = threads

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
        exact = self.spec.n_threads is not None
        with self._lock, self._slots.hold(self.threads, exact=exact) as held:
            self._run_on(held if not exact else self.threads)
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


def _slots() -> CpuSlots:
    try:
        return CpuSlots()
    except OSError as exc:
        raise PermanentModelError(
            f"cannot create the CPU slot files the embedded models share ({exc}); set "
            "XDG_RUNTIME_DIR or TMPDIR to a writable local folder"
        ) from exc


__all__ = ["LlamaCppBackend", "check", "model_file"]
