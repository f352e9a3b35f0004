"""The embedded models: llama.cpp in process (``llama-cpp-python``), on a local GGUF file.

``model`` names a catalog model (``skillgrad models list``; default the tiny SmolLM2-135M),
resolved to a verified file by ``models.catalog``; ``model_path`` runs any other GGUF as it is.
One ``Llama`` instance is not thread-safe: one decode thread (``batching``) owns it, and the
calls in flight are decoded together, one ``llama_decode`` per token for all of them, each on a
KV sequence of its own. A call starts from the longest token prefix any sequence holds (the
last call's, another call's in flight, or a parked conversation's, ``kv_sequences``, bounded
by ``options.kv_cache_mb``), so a multi-turn episode pays prefill only for its new tokens even
when several episodes interleave. The decoder holds one machine-wide CPU slot per thread it
runs (``cpu_slots``): however many models, workers and processes, the embedded models never
run more threads than the machine has cores. Without an explicit ``n_threads`` it runs on as
many cores as it finds free.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from skillgrad.errors import PermanentModelError, PromptTooLongError
from skillgrad.models.catalog import Catalog
from skillgrad.models.spec import ModelSpec
from skillgrad.models.wrappers.cpu_slots import CpuSlots
from skillgrad.types import ChatRequest, Completion, Usage

INSTALL_HINT = (
    "pip install 'skillgrad[local]'  (llama-cpp-python compiles from source, ~13 min on 2 cores)"
)


class LlamaCppOptions(BaseModel):
    """``models.<role>.options`` of the llamacpp provider."""

    model_config = ConfigDict(extra="forbid")

    kv_cache_mb: float = Field(
        256.0,
        ge=0,
        description="KV cache kept for parked conversations, in MiB (0: only the previous "
        "call's prefix is reused)",
    )
    kv_sequences: int = Field(
        8, ge=1, le=255, description="at most this many parked conversations (LRU)"
    )
    batch_sequences: int = Field(
        8,
        ge=1,
        le=64,
        description="at most this many calls decoded together, one llama_decode per token for "
        "all (1: one call at a time)",
    )


def parse_options(spec: ModelSpec) -> LlamaCppOptions:
    """The spec's ``options`` as llamacpp options, or a PermanentModelError naming the key."""
    try:
        return LlamaCppOptions.model_validate(spec.options)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'options'}: {e['msg']}" for e in exc.errors()
        )
        raise PermanentModelError(
            f"models.<role>.options of {spec.name}: {problems}. The llamacpp provider accepts "
            f"{', '.join(LlamaCppOptions.model_fields)} (docs/models.md)"
        ) from exc


@dataclass(frozen=True)
class PrefillStats:
    """Prompt tokens sent to the model and the ones it evaluated (the rest came from its KV
    cache), and how often a parked conversation was restored, parked or evicted."""

    calls: int
    prompt_tokens_sent: int
    prompt_tokens_evaluated: int
    restored: int
    parked: int
    evicted: int
    parked_bytes: int
    cap_bytes: int


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
    """Before a run: the options parse and the model file is here and verified (no model is
    loaded)."""
    parse_options(spec)
    model_file(spec)


class LlamaCppBackend:
    """In-process llama.cpp backend on ``model_file(spec)``. Its decoder holds CPU slots and
    runs one thread per slot: ``spec.n_threads`` of them when set, else the free cores (at
    least one), so a lone model uses the whole machine and two models share it."""

    def __init__(
        self,
        spec: ModelSpec | None = None,
        catalog: Catalog | None = None,
        slots: CpuSlots | None = None,
    ) -> None:
        spec = spec or ModelSpec()
        options = parse_options(spec)
        try:  # llama_cpp itself first: kv_sequences may already be imported, the extra gone
            import llama_cpp  # noqa: F401

            from skillgrad.models.batching import Decoder
            from skillgrad.models.kv_sequences import SequenceLlama
        except ImportError as exc:
            raise PermanentModelError(
                f"llama-cpp-python is not installed ({exc}). Run: {INSTALL_HINT}"
            ) from exc
        path = model_file(spec, catalog)
        self.name = spec.name
        self.spec = spec
        self._slots = slots or _slots()
        self.threads = spec.n_threads or self._slots.cores
        self._sent = 0
        self._llm = SequenceLlama(
            model_path=str(path),
            n_ctx=spec.n_ctx,
            # prompt processing too (llama-cpp-python's default for it is every CPU)
            n_threads=self.threads,
            n_threads_batch=self.threads,
            verbose=False,
            seed=0,
        )
        self._configure(options)
        self._compute = _Compute(self._llm, self._slots, self.threads, spec.n_threads is not None)
        self._lock = self._compute.lock
        self._decoder = Decoder(
            self._llm,
            spec.n_ctx,
            options.batch_sequences,
            self._compute.hold,
            draft=spec.draft == "prompt_lookup",
        )

    def _configure(self, options: LlamaCppOptions) -> None:
        from skillgrad.models.kv_sequences import MB

        # llama.cpp holds at most 256 sequences: the last call's, the parked, the batch
        parked = min(options.kv_sequences, 255 - options.batch_sequences)
        try:
            self._llm.configure(int(options.kv_cache_mb * MB), parked, options.batch_sequences)
        except ValueError as exc:  # llama.cpp could not allocate the larger context
            raise PermanentModelError(
                f"{self.name}: llama.cpp cannot hold models.<role>.options.kv_cache_mb = "
                f"{options.kv_cache_mb} MiB of parked conversations ({exc}); lower it, or "
                "set it to 0"
            ) from exc

    @property
    def prefill(self) -> PrefillStats:
        """Prompt tokens sent and evaluated so far (bench/bench_conversations.py reports it)."""
        with self._lock:
            counts, parked = self._llm.counts, self._llm.sequences
            return PrefillStats(
                calls=self._decoder.calls,
                prompt_tokens_sent=self._sent,
                prompt_tokens_evaluated=counts.prompt_tokens_evaluated,
                restored=counts.restored,
                parked=counts.parked,
                evicted=parked.evicted if parked is not None else 0,
                parked_bytes=parked.cache_size if parked is not None else 0,
                cap_bytes=parked.capacity_bytes if parked is not None else 0,
            )

    @property
    def decode_steps(self) -> int:
        """``llama_decode`` calls that advanced the calls in flight (bench_batch.py)."""
        return self._decoder.steps

    @property
    def decode_cpu_s(self) -> float:
        """CPU seconds of the decode thread: all the work when ``n_threads`` is 1, whatever
        else the cores run (bench_batch.py)."""
        return self._decoder.cpu_s

    def count_tokens(self, text: str) -> int:
        with self._lock:
            return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    async def complete(self, request: ChatRequest) -> Completion:
        """Queue the call for the decoder; cancelling the await frees its sequence at the
        decoder's next step."""
        from skillgrad.models.llama_job import Job, PromptTooLong

        chat: dict[str, Any] = {
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "seed": request.seed if request.seed is not None else 0,
        }
        if request.stop:
            chat["stop"] = list(request.stop)
        if request.response_schema is not None:
            # grammar-constrained decoding: the output always parses against the schema
            chat["response_format"] = {"type": "json_object", "schema": request.response_schema}
        # park only conversations (a reply in the history: a next turn will follow); a
        # single-turn call shares its skill prefix through the last call's sequence anyway,
        # and parked cells cost attention in every later call (docs/models.md)
        job = Job(chat, park=any(m.role == "assistant" for m in request.messages))
        try:
            reply = await asyncio.wrap_future(self._decoder.submit(job))
        except PromptTooLong as exc:  # this call's item fails, not the run
            raise PromptTooLongError(
                f"{self.name}: {exc}; raise models.<role>.n_ctx (now {self.spec.n_ctx}) or "
                "shorten the skill"
            ) from exc
        except ValueError as exc:
            raise PermanentModelError(
                f"llama.cpp refused the request: {exc}. If the prompt is too long, raise "
                f"models.<role>.n_ctx (now {self.spec.n_ctx}) or shorten the skill."
            ) from exc
        except MemoryError as exc:
            raise PermanentModelError(f"{self.name}: {exc}") from exc
        self._sent += reply.prompt_tokens
        return Completion(
            text=reply.text,
            usage=Usage(reply.prompt_tokens, reply.completion_tokens),
            model=self.name,
            finish_reason=reply.finish_reason,
        )


class _Compute:
    """The model's lock and the CPU slots, held for each burst of decode steps. It refers to the
    model, not to the backend, so a backend nobody holds is freed at once (with its model)."""

    def __init__(self, llm: Any, slots: CpuSlots, threads: int, exact: bool) -> None:
        self.lock = threading.Lock()
        self._llm, self._slots, self._threads, self._exact = llm, slots, threads, exact
        self._running = threads  # the thread count the context is set to

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        with self.lock, self._slots.hold(self._threads, exact=self._exact) as held:
            threads = self._threads if self._exact else held
            if threads != self._running:  # run on the slots held
                from llama_cpp import llama_set_n_threads

                llama_set_n_threads(self._llm.ctx, threads, threads)
                self._running = threads
            yield


def _slots() -> CpuSlots:
    try:
        return CpuSlots()
    except OSError as exc:
        raise PermanentModelError(
            f"cannot create the CPU slot files the embedded models share ({exc}); set "
            "XDG_RUNTIME_DIR or TMPDIR to a writable local folder"
        ) from exc


__all__ = [
    "LlamaCppBackend",
    "LlamaCppOptions",
    "PrefillStats",
    "check",
    "model_file",
    "parse_options",
]
