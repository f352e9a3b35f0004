"""One KV-cache sequence per conversation for the in-process llama.cpp backend (imports llama_cpp).

llama-cpp-python reuses only the token prefix of its previous call, so interleaved multi-turn
episodes would re-read their whole history at every step. Here, after each call, llama.cpp's
working sequence (seq 0) is *parked* under a sequence id of its own: in a unified KV cache
``seq_cp`` only tags the same cells with a second id (no bytes copied, unlike ``save_state``).
A call whose prompt extends a parked sequence gets it back into seq 0 (``seq_rm`` + ``seq_cp``)
through llama-cpp-python's own cache hook (``Llama.set_cache``), and pays prefill only for its
new tokens. Parked sequences form an LRU bounded in KV bytes and in count; the context holds
``n_ctx`` cells for the working sequence plus the cap's cells, so KV memory has a fixed bound.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from llama_cpp import Llama
from llama_cpp import _internals as internals
from llama_cpp import llama_cpp as lib
from llama_cpp.llama_cache import BaseLlamaCache

MB = 1024 * 1024


@dataclass(frozen=True)
class Parked:
    """One parked sequence: the tokens whose KV cells carry sequence id ``slot``."""

    slot: int
    tokens: tuple[int, ...]
    bytes_per_token: int

    # the attributes llama-cpp-python's cache hook reads from a saved state
    @property
    def input_ids(self) -> np.ndarray:
        return np.asarray(self.tokens, dtype=np.intc)

    @property
    def llama_state_size(self) -> int:
        return len(self.tokens) * self.bytes_per_token


@dataclass
class PrefillCounts:
    """What the model did with the prompts it was sent (mutable, under the backend's lock)."""

    prompt_tokens_evaluated: int = 0
    restored: int = 0
    parked: int = 0
    pending: bool = field(default=False, repr=False)


def kv_bytes_per_token(llm: Llama) -> int:
    """KV-cache bytes one token takes (f16 K and V in every layer), from the model's shape."""
    model = llm._model.model
    n_head = max(1, lib.llama_model_n_head(model))
    head_dim = lib.llama_model_n_embd(model) // n_head
    kv_width = lib.llama_model_n_head_kv(model) * head_dim
    return max(1, lib.llama_model_n_layer(model) * 2 * kv_width * 2)


class WorkingSequenceContext(internals.LlamaContext):
    """The ``Llama`` class removes KV cells of *every* sequence (seq_id -1) when it truncates its
    own; here that means its working sequence 0 only, so parked sequences survive."""

    def kv_cache_seq_rm(self, seq_id: int, p0: int, p1: int) -> bool:
        return bool(super().kv_cache_seq_rm(0 if seq_id < 0 else seq_id, p0, p1))


class ParkedSequences(BaseLlamaCache):
    """The LRU of parked sequences, plugged in with ``Llama.set_cache``: lookups return the one
    sharing the longest token prefix with a prompt; parking drops the sequences the new one
    extends (one per conversation) and the least recently used beyond the caps."""

    def __init__(self, capacity_bytes: int, max_sequences: int, bytes_per_token: int) -> None:
        super().__init__(capacity_bytes)
        self.bytes_per_token = bytes_per_token
        self.max_sequences = max_sequences
        self._entries: OrderedDict[int, Parked] = OrderedDict()  # slot -> parked, LRU first
        self._free = list(range(max_sequences, 0, -1))  # seq ids 1..max (0 is the working one)
        self.ctx: internals.LlamaContext | None = None
        self.evicted = 0

    @property
    def cache_size(self) -> int:
        return sum(p.llama_state_size for p in self._entries.values())

    def _longest(self, key: Sequence[int]) -> Parked | None:
        best, best_len = None, 0
        for parked in self._entries.values():
            n = Llama.longest_token_prefix(parked.tokens, key)
            if n > best_len:
                best, best_len = parked, n
        return best

    def __getitem__(self, key: Sequence[int]) -> Parked:  # type: ignore[override]
        parked = self._longest(key)
        if parked is None:
            raise KeyError("no parked sequence shares a prefix with the prompt")
        self._entries.move_to_end(parked.slot)
        return parked

    def __contains__(self, key: Sequence[int]) -> bool:
        return self._longest(key) is not None

    def __setitem__(self, key: Sequence[int], value: Any) -> None:
        """The hook stores what ``save_state`` returned: already parked (or not parked at all,
        None), nothing to do."""

    def _drop(self, slot: int) -> None:
        self._entries.pop(slot)
        if self.ctx is not None:
            self.ctx.kv_cache_seq_rm(slot, -1, -1)
        self._free.append(slot)

    def park(self, tokens: tuple[int, ...]) -> Parked | None:
        """Tag seq 0's cells (``tokens``) with a free sequence id; None if it cannot fit."""
        if self.ctx is None or not tokens:
            return None
        need = len(tokens) * self.bytes_per_token
        if need > self.capacity_bytes:
            return None
        for slot in [s for s, p in self._entries.items() if tokens[: len(p.tokens)] == p.tokens]:
            self._drop(slot)  # superseded: the new sequence extends it
        while self._entries and (not self._free or self.cache_size + need > self.capacity_bytes):
            self._drop(next(iter(self._entries)))
            self.evicted += 1
        slot = self._free.pop()
        self.ctx.kv_cache_seq_cp(0, slot, -1, -1)
        parked = Parked(slot, tokens, self.bytes_per_token)
        self._entries[slot] = parked
        return parked

    def __bool__(self) -> bool:
        return True  # the hook runs only `if self.cache:`, even while nothing is parked

    @property
    def count(self) -> int:
        return len(self._entries)


class SequenceLlama(Llama):
    """``Llama`` that counts prompt tokens evaluated and, with a ``ParkedSequences`` cache
    (``enable_parking``), saves and loads states by parking sequences instead of copying
    the KV cache."""

    counts: PrefillCounts
    sequences: ParkedSequences | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.counts = PrefillCounts()
        self.sequences = None
        self.park_next = False  # set per call by the backend: park this call's sequence?

    def enable_parking(self, capacity_bytes: int, max_sequences: int) -> None:
        """Recreate the context with ``n_ctx`` + the cap's cells in one unified KV buffer shared
        by ``max_sequences`` parked sequences, and plug the LRU in as the cache."""
        per_token = kv_bytes_per_token(self)
        params = self.context_params
        params.n_ctx = self._n_ctx + capacity_bytes // per_token
        params.n_seq_max = max_sequences + 1
        params.kv_unified = True  # one buffer: seq_cp tags cells instead of copying them
        old = self._ctx
        ctx = WorkingSequenceContext(model=self._model, params=params, verbose=self.verbose)
        self._ctx = self._stack.enter_context(contextlib.closing(ctx))
        old.close()
        self.n_tokens = 0  # the new context holds nothing; _n_ctx stays the per-call window
        self.sequences = ParkedSequences(capacity_bytes, max_sequences, per_token)
        self.sequences.ctx = ctx
        self.set_cache(self.sequences)

    def save_state(self) -> Any:
        if self.sequences is None:
            return super().save_state()
        if not self.park_next:
            return None
        tokens = tuple(int(t) for t in self.input_ids[: self.n_tokens])
        parked = self.sequences.park(tokens)
        self.counts.parked += parked is not None
        return parked

    def load_state(self, state: Any) -> None:
        self.counts.restored += 1
        if not isinstance(state, Parked):
            super().load_state(state)
            return
        self._ctx.kv_cache_seq_rm(0, -1, -1)
        self._ctx.kv_cache_seq_cp(state.slot, 0, -1, -1)
        n = len(state.tokens)
        self.input_ids[:n] = state.input_ids
        self.n_tokens = n
        self._requires_eval = True  # logits are not parked: generate re-evaluates a token

    def generate(
        self, tokens: Sequence[int], *args: Any, **kwargs: Any
    ) -> Generator[int, Any, None]:
        self.counts.pending = True  # the next eval is this prompt's remainder
        return (yield from super().generate(tokens, *args, **kwargs))

    def eval(self, tokens: Sequence[int]) -> None:
        if self.counts.pending:
            self.counts.pending = False
            self.counts.prompt_tokens_evaluated += len(tokens)
        super().eval(tokens)


__all__ = [
    "MB",
    "Parked",
    "ParkedSequences",
    "PrefillCounts",
    "SequenceLlama",
    "WorkingSequenceContext",
    "kv_bytes_per_token",
]
