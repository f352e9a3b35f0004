"""KV-cache sequences of the in-process llama.cpp backend (imports llama_cpp).

One context holds every sequence in one unified KV buffer, where ``seq_cp`` only tags the same
cells with a second id (no bytes copied, unlike ``save_state``). Sequence 0 keeps the tokens of
the last finished call, ids ``1..max_parked`` hold *parked* conversations, and the ids above
them the calls being decoded together (``batching``). A call whose prompt extends any of them
starts from a tagged copy of that prefix and pays prefill only for its new tokens. Parked
sequences form an LRU bounded in KV bytes and in count; the context holds ``n_ctx`` cells plus
the cap's cells, so KV memory has a fixed bound.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from llama_cpp import Llama
from llama_cpp import _internals as internals
from llama_cpp import llama_cpp as lib

MB = 1024 * 1024


@dataclass(frozen=True)
class Parked:
    """One parked sequence: the tokens whose KV cells carry sequence id ``slot``."""

    slot: int
    tokens: tuple[int, ...]
    bytes_per_token: int

    @property
    def size(self) -> int:
        return len(self.tokens) * self.bytes_per_token


@dataclass
class PrefillCounts:
    """What the model did with the prompts it was sent (mutable, on the decode thread)."""

    prompt_tokens_evaluated: int = 0
    restored: int = 0
    parked: int = 0


def kv_bytes_per_token(llm: Llama) -> int:
    """KV-cache bytes one token takes (f16 K and V in every layer), from the model's shape."""
    model = llm._model.model
    n_head = max(1, lib.llama_model_n_head(model))
    head_dim = lib.llama_model_n_embd(model) // n_head
    kv_width = lib.llama_model_n_head_kv(model) * head_dim
    return max(1, lib.llama_model_n_layer(model) * 2 * kv_width * 2)


def shared_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens ``a`` and ``b`` have in common."""
    return Llama.longest_token_prefix(a, b)


class ParkedSequences:
    """The LRU of parked sequences: ``longest`` finds the one sharing the longest token prefix
    with a prompt; parking drops the sequences the new one extends (one per conversation) and
    the least recently used beyond the caps."""

    def __init__(
        self, ctx: internals.LlamaContext, capacity_bytes: int, max_sequences: int, per_token: int
    ) -> None:
        self.ctx = ctx
        self.capacity_bytes = capacity_bytes
        self.bytes_per_token = per_token
        self.max_sequences = max_sequences
        self._entries: OrderedDict[int, Parked] = OrderedDict()  # slot -> parked, LRU first
        self._free = list(range(max_sequences, 0, -1))  # seq ids 1..max (0 is the last call's)
        self.evicted = 0

    @property
    def cache_size(self) -> int:
        return sum(p.size for p in self._entries.values())

    @property
    def count(self) -> int:
        return len(self._entries)

    def longest(self, key: Sequence[int]) -> tuple[Parked | None, int]:
        """The parked sequence sharing the longest prefix with ``key`` (marked recently used),
        and that length; ``(None, 0)`` when none shares a token."""
        best, best_len = None, 0
        for parked in self._entries.values():
            n = shared_prefix(parked.tokens, key)
            if n > best_len:
                best, best_len = parked, n
        if best is not None:
            self._entries.move_to_end(best.slot)
        return best, best_len

    def _drop(self, slot: int) -> None:
        self._entries.pop(slot)
        self.ctx.kv_cache_seq_rm(slot, -1, -1)
        self._free.append(slot)

    def evict_oldest(self) -> bool:
        """Free the least recently used sequence's cells; False when nothing is parked."""
        if not self._entries:
            return False
        self._drop(next(iter(self._entries)))
        self.evicted += 1
        return True

    def park(self, tokens: tuple[int, ...], source: int) -> Parked | None:
        """Tag sequence ``source``'s cells (``tokens``) with a free id; None if they cannot fit."""
        need = len(tokens) * self.bytes_per_token
        if not tokens or need > self.capacity_bytes:
            return None
        for slot in [s for s, p in self._entries.items() if tokens[: len(p.tokens)] == p.tokens]:
            self._drop(slot)  # superseded: the new sequence extends it
        while self._entries and (not self._free or self.cache_size + need > self.capacity_bytes):
            self.evict_oldest()
        slot = self._free.pop()
        self.ctx.kv_cache_seq_cp(source, slot, -1, -1)
        parked = Parked(slot, tokens, self.bytes_per_token)
        self._entries[slot] = parked
        return parked


class SequenceContext(internals.LlamaContext):
    """A context whose ``seq_rm`` of "every sequence" (seq_id -1) means sequence 0 only, so a
    stray library call can never drop parked or decoding sequences."""

    def kv_cache_seq_rm(self, seq_id: int, p0: int, p1: int) -> bool:
        return bool(super().kv_cache_seq_rm(0 if seq_id < 0 else seq_id, p0, p1))


class SequenceLlama(Llama):
    """``Llama`` whose context holds ``1 + max_parked + batch`` sequences in one unified KV
    buffer (``configure``); the batched decoder drives it through the low-level API."""

    counts: PrefillCounts
    sequences: ParkedSequences | None
    first_batch_seq: int

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.counts = PrefillCounts()
        self.sequences = None
        self.first_batch_seq = 1

    def configure(self, capacity_bytes: int, max_parked: int, batch: int) -> None:
        """Recreate the context with ``n_ctx`` + the cap's cells shared by the last call's
        sequence, ``max_parked`` parked ones (none when ``capacity_bytes`` is 0) and ``batch``
        decoding ones; raises ValueError when llama.cpp cannot allocate it."""
        per_token = kv_bytes_per_token(self)
        parked = max_parked if capacity_bytes > 0 else 0
        params = self.context_params
        params.n_ctx = self._n_ctx + capacity_bytes // per_token
        params.n_seq_max = 1 + parked + batch
        params.kv_unified = True  # one buffer: seq_cp tags cells instead of copying them
        old = self._ctx
        ctx = SequenceContext(model=self._model, params=params, verbose=self.verbose)
        self._ctx = self._stack.enter_context(contextlib.closing(ctx))
        old.close()
        self.n_tokens = 0  # the new context holds nothing; _n_ctx stays the per-call window
        self.first_batch_seq = 1 + parked
        if parked:
            self.sequences = ParkedSequences(ctx, capacity_bytes, parked, per_token)


__all__ = [
    "MB",
    "Parked",
    "ParkedSequences",
    "PrefillCounts",
    "SequenceContext",
    "SequenceLlama",
    "kv_bytes_per_token",
    "shared_prefix",
]
