"""Batched decoding in the llama.cpp backend: calls in flight are decoded together and reply
exactly as the library does for each alone; a call that stops early or is cancelled leaves the
others untouched and frees its sequence.

The slow tests run the real qwen2.5-coder-0.5b (skipped when it is not pulled)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from skillgrad.errors import PermanentModelError
from skillgrad.models.llamacpp import parse_options
from skillgrad.models.spec import ModelSpec
from skillgrad.types import ChatRequest, Completion, Message

SYSTEM = "You are a terse assistant."
ASKS = [
    ("Write a Python function that adds two numbers.", 16, ()),
    ("Name three colors.", 16, (",",)),  # stops on a stop string
    ("What is the capital of France? One sentence.", 16, ()),  # stops on its own
    ("Count from 1 to 20.", 3, ()),  # stops at its token limit
]


def _requests() -> list[ChatRequest]:
    return [
        ChatRequest((Message("system", SYSTEM), Message("user", ask)), max_tokens=n, stop=stop)
        for ask, n, stop in ASKS
    ]


def test_batch_and_draft_options() -> None:
    assert parse_options(ModelSpec()).batch_sequences == 8
    with pytest.raises(PermanentModelError, match="batch_sequences"):
        parse_options(ModelSpec(options={"batch_sequences": 0}))
    assert ModelSpec.parse({"draft": "prompt_lookup"}).draft == "prompt_lookup"
    assert ModelSpec().draft is None
    with pytest.raises(ValueError, match="draft"):
        ModelSpec.parse({"draft": "eagle"})


@pytest.fixture(scope="module")
def qwen_spec() -> ModelSpec:
    pytest.importorskip("llama_cpp", reason="pip install 'skillgrad[local]'")
    from skillgrad.models.catalog import Catalog

    if Catalog.default().status("qwen2.5-coder-0.5b").path is None:
        pytest.skip("skillgrad models pull qwen2.5-coder-0.5b")
    return ModelSpec(model="qwen2.5-coder-0.5b", n_ctx=1024)


@pytest.fixture(scope="module")
def backend(qwen_spec: ModelSpec) -> Any:
    from skillgrad.models.llamacpp import LlamaCppBackend

    return LlamaCppBackend(qwen_spec)


def _library(spec: ModelSpec, requests: list[ChatRequest]) -> list[tuple[str, int, str]]:
    """What llama-cpp-python's own create_chat_completion replies, one call at a time."""
    from llama_cpp import Llama

    from skillgrad.models.llamacpp import model_file

    llm = Llama(model_path=str(model_file(spec)), n_ctx=spec.n_ctx, verbose=False, seed=0)
    out = []
    for r in requests:
        reply: Any = llm.create_chat_completion(
            messages=[{"role": m.role, "content": m.content} for m in r.messages],
            temperature=0.0,
            max_tokens=r.max_tokens,
            seed=0,
            stop=list(r.stop),
        )
        choice = reply["choices"][0]
        out.append(
            (
                choice["message"]["content"],
                reply["usage"]["completion_tokens"],
                choice["finish_reason"],
            )
        )
    return out


def _summary(replies: list[Completion]) -> list[tuple[str, int, str]]:
    return [(c.text, c.usage.completion_tokens, c.finish_reason) for c in replies]


@pytest.mark.slow
async def test_batched_replies_equal_one_by_one_and_the_library(qwen_spec: ModelSpec) -> None:
    """Each mode on a fresh model: a call's prefill starts from what earlier calls left in the
    KV cache, and a different start changes llama.cpp's sums (docs/models.md, "Determinism")."""
    from skillgrad.models.llamacpp import LlamaCppBackend

    requests = _requests()
    serial = LlamaCppBackend(qwen_spec)
    one_by_one = [await serial.complete(r) for r in requests]
    batched = LlamaCppBackend(qwen_spec)
    together = await asyncio.gather(*(batched.complete(r) for r in requests))
    assert _summary(list(together)) == _summary(one_by_one)
    assert [c.usage.prompt_tokens for c in together] == [c.usage.prompt_tokens for c in one_by_one]
    # the early stops (stop string, own end, token limit) left the others decoding on
    assert [c.finish_reason for c in together] == ["length", "stop", "stop", "length"]
    # decoded together: the longest reply's steps, not the sum of all replies' tokens
    longest = max(c.usage.completion_tokens for c in together)
    assert batched.decode_steps <= longest < serial.decode_steps
    assert _summary(one_by_one) == _library(qwen_spec, requests)


def _seq_positions(backend: Any) -> list[int]:
    """The highest position each batch sequence holds in the KV cache (-1: empty)."""
    from llama_cpp import llama_cpp as lib

    llm = backend._llm
    memory = lib.llama_get_memory(llm._ctx.ctx)
    first = llm.first_batch_seq
    width = parse_options(backend.spec).batch_sequences
    return [lib.llama_memory_seq_pos_max(memory, s) for s in range(first, first + width)]


@pytest.mark.slow
async def test_cancelled_call_frees_its_sequence_and_spares_the_others(
    qwen_spec: ModelSpec,
) -> None:
    from skillgrad.models.llamacpp import LlamaCppBackend

    requests = _requests()[:2]
    story = (Message("system", SYSTEM), Message("user", "Tell a long story about a cat."))
    # the reference: the same three calls on a fresh model, the story decoding on to its end
    reference = LlamaCppBackend(qwen_spec)
    expected = await asyncio.gather(
        *(reference.complete(r) for r in [ChatRequest(story, max_tokens=24), *requests])
    )
    backend = LlamaCppBackend(qwen_spec)
    doomed = asyncio.create_task(backend.complete(ChatRequest(story, max_tokens=400)))
    others = [asyncio.create_task(backend.complete(r)) for r in requests]
    while len(backend._decoder.active) < 3:  # all three are decoding
        await asyncio.sleep(0.005)
    doomed.cancel()
    replies = await asyncio.gather(*others)
    with pytest.raises(asyncio.CancelledError):
        await doomed
    assert _summary(list(replies)) == _summary(list(expected[1:]))
    for _ in range(500):  # the decoder drops it at its next step
        if not backend._decoder.active:
            break
        await asyncio.sleep(0.01)
    assert backend._decoder.active == []
    assert backend.decode_steps < 40  # the story did not decode on to its 400 tokens
    assert _seq_positions(backend) == [-1] * parse_options(qwen_spec).batch_sequences
    # nothing of the cancelled call lingers: the next call decodes as on the reference model
    again = await backend.complete(ChatRequest(story, max_tokens=4))
    assert again.text == (await reference.complete(ChatRequest(story, max_tokens=4))).text


@pytest.mark.slow
async def test_prompt_lookup_draft_replies_the_same(qwen_spec: ModelSpec, backend: Any) -> None:
    """A reply that copies its prompt: drafted tokens are confirmed, fewer decode steps, the
    same text."""
    from skillgrad.models.llamacpp import LlamaCppBackend

    text = "The quick brown fox jumps over the lazy dog near the old river bank at dawn."
    copy = ChatRequest(
        (Message("user", f"Repeat this sentence exactly, nothing else:\n{text}"),), max_tokens=24
    )
    plain_steps = backend.decode_steps
    plain = await backend.complete(copy)
    plain_steps = backend.decode_steps - plain_steps
    drafting = LlamaCppBackend(qwen_spec.model_copy(update={"draft": "prompt_lookup"}))
    drafted = await drafting.complete(copy)
    assert _summary([drafted]) == _summary([plain])
    assert drafting.decode_steps < plain_steps / 2


@pytest.mark.slow
async def test_a_dropped_backend_frees_its_model_and_thread(qwen_spec: ModelSpec) -> None:
    """Runs load one model per backend: dropping one must free it at once (no cycle waiting
    for the garbage collector), and its decode thread must end."""
    import gc
    import threading
    import weakref

    from skillgrad.models.llamacpp import LlamaCppBackend

    backend = LlamaCppBackend(qwen_spec.model_copy(update={"options": {"kv_cache_mb": 1}}))
    await backend.complete(_requests()[3])
    model, thread = weakref.ref(backend._llm), backend._decoder._thread
    gc.disable()
    try:
        del backend
        # the decode thread lets go of its decoder when its last step ends (later under load)
        thread.join(5)
        assert not thread.is_alive()
        assert model() is None
    finally:
        gc.enable()
    assert "llama-decode" not in [t.name for t in threading.enumerate() if t is thread]


async def test_a_prompt_longer_than_the_context_window_is_that_calls_error(backend: Any) -> None:
    """The real model refuses a prompt that does not fit ``n_ctx`` (1024 here) with a
    ``PromptTooLongError``: one item's failure, not a systemic one; the next call still runs."""
    from skillgrad.errors import PromptTooLongError, SystemicError

    long = ChatRequest((Message("user", "apple " * 1500),), max_tokens=4)
    with pytest.raises(PromptTooLongError, match="exceed context window of 1024") as caught:
        await backend.complete(long)
    assert not isinstance(caught.value, SystemicError)
    short = await backend.complete(ChatRequest((Message("user", "Say hi."),), max_tokens=4))
    assert short.text
