"""The batched decoder of the in-process llama.cpp backend (imports llama_cpp).

One thread owns the ``Llama`` instance. Calls queue up; each is prefilled on its own sequence
(from the longest prefix any sequence already holds), then every call in flight advances by one
token per ``llama_decode``: on a CPU a decode step reads the weights once for all sequences.
Finished calls leave and new ones join between steps; a cancelled call's sequence is dropped
at the next step. With ``draft`` set, each call also proposes tokens copied from its own
context (prompt lookup) and keeps those the model confirms.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

from llama_cpp import _internals as internals
from llama_cpp import llama_cpp as lib

from skillgrad.models.kv_sequences import SequenceLlama, shared_prefix
from skillgrad.models.llama_job import DRAFT_TOKENS, Job, Reply

BURST_S = 0.5  # steps run per hold of the lock and CPU slots, so other models get turns


class KvFull(Exception):
    """llama.cpp found no room in the KV cache for a batch."""


class Decoder:
    """Decodes the queued jobs on ``llm``. ``hold`` wraps each burst of steps (the backend's
    lock and CPU slots)."""

    def __init__(
        self,
        llm: SequenceLlama,
        n_ctx: int,
        width: int,
        hold: Callable[[], AbstractContextManager[None]],
        draft: bool = False,
    ) -> None:
        self.llm = llm
        self.n_ctx = n_ctx
        self.width = width
        self.draft = draft
        self._hold = hold
        self._queue: deque[Job] = deque()
        self._wake = threading.Condition()
        self.active: list[Job] = []
        self._free = list(range(llm.first_batch_seq + width - 1, llm.first_batch_seq - 1, -1))
        self.recent: list[int] = []  # the tokens sequence 0 holds: the last finished call's
        rows = max(llm.n_batch, width * (1 + DRAFT_TOKENS))
        self._batch = internals.LlamaBatch(n_tokens=rows, embd=0, n_seq_max=1, verbose=False)
        self._full = False  # a call was sent back for lack of KV room: admit after a release
        self.steps = 0  # decode calls that advanced the calls in flight (bench)
        self.cpu_s = 0.0  # CPU seconds of the decode thread (with one llama.cpp thread: all)
        self.calls = 0
        self.stopping = False
        self._thread = threading.Thread(
            target=_serve, args=(weakref.ref(self), self._wake), name="llama-decode", daemon=True
        )
        self._thread.start()
        _LIVE.add(self)

    def submit(self, job: Job) -> concurrent.futures.Future[Reply]:
        with self._wake:
            if self.stopping:
                raise RuntimeError("the model is closed")
            self.calls += 1
            self._queue.append(job)
            self._wake.notify()
        return job.future

    def has_work(self) -> bool:
        return bool(self._queue or self.active)

    def close(self, timeout: float = 30.0) -> None:
        """Stop after the current step (at exit, so no step runs while the model is freed);
        calls still queued or decoding fail."""
        with self._wake:
            self.stopping = True
            self._wake.notify_all()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)
        with self._wake:
            waiting, self._queue = list(self._queue), deque()
        for job in [*self.active, *waiting]:
            self._fail(job, RuntimeError("the model was closed before this call ended"))

    def burst(self) -> None:
        """Steps under one hold of the model and the CPU slots, for at most ``BURST_S``."""
        with self._hold():
            cpu, end = time.thread_time(), time.monotonic() + BURST_S
            while self.has_work() and not self.stopping and time.monotonic() < end:
                try:
                    self._step()
                except Exception as exc:  # llama.cpp failed: fail the calls, keep the thread
                    for job in list(self.active):
                        self._fail(job, exc)
            self.cpu_s += time.thread_time() - cpu

    def _step(self) -> None:
        """Admit queued jobs while there is room, then advance every active job one step."""
        self._drop_cancelled()
        while len(self.active) < self.width and not (self._full and self.active):
            with self._wake:
                job = self._queue.popleft() if self._queue else None
            if job is None:
                break
            if not job.cancelled and not self._admit(job):
                break
        if self.active:
            self._advance()

    def _drop_cancelled(self) -> None:
        for job in [j for j in self.active if j.cancelled]:
            self._release(job)

    def _release(self, job: Job) -> None:
        self.llm._ctx.kv_cache_seq_rm(job.seq, -1, -1)
        self.active.remove(job)
        self._free.append(job.seq)
        job.seq = -1
        self._full = False

    def _requeue(self, job: Job) -> None:
        """Back to the head of the queue; admitting it again restarts it from its prompt with
        a fresh sampler, so its reply is the same."""
        self._release(job)
        self._full = True
        with self._wake:
            self._queue.appendleft(job)

    def _fail(self, job: Job, exc: BaseException) -> None:
        if job.seq >= 0:
            self._release(job)
        with contextlib.suppress(concurrent.futures.InvalidStateError):  # cancelled meanwhile
            job.future.set_exception(exc)

    def _admit(self, job: Job) -> bool:
        """Prefill ``job`` and sample its first token; False when the KV cache is full (the
        job goes back to the head of the queue for a later step)."""
        try:
            job.prepare(self.llm, self.n_ctx)
        except Exception as exc:  # the call's own failure, e.g. too long
            self._fail(job, exc)
            return True
        job.seq = self._free.pop()
        self.active.append(job)
        start = self._reuse(job)
        try:
            index = self._prefill(job, start)
        except KvFull:
            if len(self.active) > 1:
                self._requeue(job)
                return False
            self._fail(job, MemoryError(_KV_FULL))
            return True
        job.tokens = list(job.prompt)
        self._after_sample(job, [index], [])
        return True

    def _sources(self, job: Job) -> Iterator[tuple[int, list[int] | tuple[int, ...], bool]]:
        yield 0, self.recent, False
        for other in self.active:
            if other is not job and other.tokens:
                yield other.seq, other.tokens, False
        if self.llm.sequences is not None:
            parked, _ = self.llm.sequences.longest(job.prompt)
            if parked is not None:
                yield parked.slot, parked.tokens, True

    def _reuse(self, job: Job) -> int:
        """Tag the longest prefix any sequence holds with ``job.seq``; how many tokens that is
        (at least one prompt token is left to evaluate: its logits give the first token)."""
        best, best_len, restored = 0, 0, False
        for seq, tokens, parked in self._sources(job):
            n = shared_prefix(tokens, job.prompt)
            if n > best_len:
                best, best_len, restored = seq, n, parked
        best_len = min(best_len, len(job.prompt) - 1)
        if best_len > 0:
            self.llm._ctx.kv_cache_seq_cp(best, job.seq, 0, best_len)
            self.llm.counts.restored += restored
        self._trim_recent(best_len if best == 0 else 0)
        return best_len

    def _trim_recent(self, keep: int) -> None:
        """Free the last call's cells beyond ``keep`` before the prefill, as llama-cpp-python
        does with its one sequence: the new tokens then take the freed cells right after the
        prefix, and a call alone sees the same cell layout, hence the same sums, as there."""
        self.llm._ctx.kv_cache_seq_rm(0, keep, -1)
        self.recent = self.recent[:keep]

    def _prefill(self, job: Job, start: int) -> int:
        """Evaluate ``job.prompt[start:]`` in ``n_batch`` chunks on its sequence; the batch
        index of the last token's logits."""
        rest, last = job.prompt[start:], 0
        self.llm.counts.prompt_tokens_evaluated += len(rest)
        for i in range(0, len(rest), self.llm.n_batch):
            chunk = rest[i : i + self.llm.n_batch]
            last = len(chunk) - 1
            self._fill([(job.seq, start + i + k, t, k == last) for k, t in enumerate(chunk)])
            self._decode()
        return last

    def _fill(self, rows: list[tuple[int, int, int, bool]]) -> None:
        batch = self._batch.batch
        batch.n_tokens = len(rows)
        for i, (seq, pos, token, logits) in enumerate(rows):
            batch.token[i] = token
            batch.pos[i] = pos
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = seq
            batch.logits[i] = logits

    def _decode(self) -> None:
        code = lib.llama_decode(self.llm._ctx.ctx, self._batch.batch)
        while code == 1 and self._make_room():
            code = lib.llama_decode(self.llm._ctx.ctx, self._batch.batch)
        if code == 1:
            raise KvFull
        if code != 0:
            raise RuntimeError(f"llama_decode returned {code}")

    def _make_room(self) -> bool:
        """Free cells not needed by the calls in flight: parked sequences (oldest first),
        then the last call's."""
        if self.llm.sequences is not None and self.llm.sequences.evict_oldest():
            return True
        if self.recent:
            self.llm._ctx.kv_cache_seq_rm(0, -1, -1)
            self.recent = []
            return True
        return False

    def _advance(self) -> None:
        """One decode of every active job's pending token (and its drafts)."""
        rows: list[tuple[int, int, int, bool]] = []
        plan: list[tuple[Job, list[int], list[int]]] = []
        for job in self.active:
            drafts = job.draft(self._draft_room(job)) if self.draft else []
            indices = []
            for k, token in enumerate([job.pending, *drafts]):
                indices.append(len(rows))
                rows.append((job.seq, len(job.tokens) + k, token, True))
            plan.append((job, indices, drafts))
        self._fill(rows)
        try:
            self._decode()
        except KvFull:
            if len(self.active) == 1:
                self._fail(self.active[0], MemoryError(_KV_FULL))
                return
            self._requeue(self.active[-1])  # the newest restarts once others have finished
            return
        self.steps += 1
        for job, indices, drafts in plan:
            job.tokens.append(job.pending)
            self._after_sample(job, indices, drafts)

    def _draft_room(self, job: Job) -> int:
        """Drafts beyond the token limit or the context window would be thrown away."""
        return min(job.max_tokens - len(job.completion) - 1, self.n_ctx - len(job.tokens) - 2)

    def _after_sample(self, job: Job, indices: list[int], drafts: list[int]) -> None:
        """Sample at each index in turn: a token equal to the next draft confirms it (its
        cells stay); the first other token becomes pending and the rest of the drafts go."""
        for k, index in enumerate(indices):
            token = job.sampler.sample(self.llm._ctx, index)
            reply = job.take(self.llm, token)
            if reply is not None:
                self._finish(job, reply)
                return
            if k < len(drafts) and token == drafts[k]:
                job.tokens.append(token)
                continue
            break
        self.llm._ctx.kv_cache_seq_rm(job.seq, len(job.tokens), -1)

    def _finish(self, job: Job, reply: Reply) -> None:
        """Keep the call's evaluated tokens as the last call's (and parked, for a
        conversation), free its sequence, deliver its reply."""
        ctx, tokens = self.llm._ctx, job.tokens
        ctx.kv_cache_seq_rm(job.seq, len(tokens), -1)
        parked = self.llm.sequences
        if job.park and parked is not None:
            self.llm.counts.parked += parked.park(tuple(tokens), job.seq) is not None
        ctx.kv_cache_seq_rm(0, -1, -1)
        ctx.kv_cache_seq_cp(job.seq, 0, -1, -1)
        self.recent = list(tokens)
        self._release(job)
        with contextlib.suppress(concurrent.futures.InvalidStateError):  # cancelled meanwhile
            job.future.set_result(reply)


def _serve(ref: weakref.ref[Decoder], wake: threading.Condition) -> None:
    """The decode thread. It holds its decoder only while there is work, so a backend nobody
    uses any more is garbage-collected (its model freed) and the thread ends."""
    while True:
        with wake:
            decoder = ref()
            while decoder is not None and not decoder.stopping and not decoder.has_work():
                decoder = None
                wake.wait(timeout=1.0)
                decoder = ref()
        if decoder is None or decoder.stopping:
            return
        try:
            decoder.burst()
        except Exception as exc:  # the CPU slots or the lock failed: fail what waits
            for job in list(decoder.active):
                decoder._fail(job, exc)
            time.sleep(0.1)
        decoder = None


_LIVE: weakref.WeakSet[Decoder] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for decoder in list(_LIVE):
        decoder.close()


_KV_FULL = (
    "the KV cache has no room for this call's tokens even alone; raise models.<role>.n_ctx or "
    "shorten the prompt"
)

__all__ = ["Decoder", "KvFull"]
