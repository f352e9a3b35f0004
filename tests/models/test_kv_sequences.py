"""Parked KV sequences of the llama.cpp backend: interleaved conversations pay prefill only for
their new tokens, reply exactly as without the cache, and stay within the byte cap.

The slow tests run the real qwen2.5-coder-0.5b (skipped when it is not pulled)."""

from __future__ import annotations

import pytest

from skillgrad.errors import PermanentModelError
from skillgrad.models.llamacpp import check, parse_options
from skillgrad.models.spec import ModelSpec
from skillgrad.types import ChatRequest, Message

SYSTEM = (
    "You play a text game. Reply with exactly one command, a verb and an object, such as "
    "'take key' or 'go north'. Read each observation: it says what your last command changed. "
    "Never repeat a command the game did not accept."
)
OBSERVATIONS = [
    "You are in a kitchen. You see a fridge, a wooden table and a closed drawer.",
    "The drawer is open. Inside it you see a small brass key and an old book.",
    "You take the key. A door leads east; a window faces the garden to the north.",
]


def test_options_default_and_validation() -> None:
    opts = parse_options(ModelSpec())
    assert opts.kv_cache_mb == 256 and opts.kv_sequences == 8
    assert parse_options(ModelSpec(options={"kv_cache_mb": 0})).kv_cache_mb == 0
    with pytest.raises(PermanentModelError, match=r"kv_cache_size.*kv_cache_mb"):
        parse_options(ModelSpec(options={"kv_cache_size": 1}))
    with pytest.raises(PermanentModelError, match="kv_cache_mb"):
        check(ModelSpec(options={"kv_cache_mb": -1}))
    with pytest.raises(PermanentModelError, match="kv_sequences"):
        parse_options(ModelSpec(options={"kv_sequences": 0}))


async def _interleaved(backend: object, conversations: int, turns: int) -> list[list[str]]:
    """Round-robin turns of several conversations: the worst order for prefix reuse."""
    histories = [[Message("system", f"{SYSTEM} Game {c + 1}.")] for c in range(conversations)]
    replies: list[list[str]] = [[] for _ in range(conversations)]
    for turn in range(turns):
        for c, history in enumerate(histories):
            history.append(Message("user", OBSERVATIONS[(turn + c) % len(OBSERVATIONS)]))
            out = await backend.complete(ChatRequest(tuple(history), max_tokens=10))  # type: ignore[attr-defined]
            replies[c].append(out.text)
            history.append(Message("assistant", out.text))
    return replies


async def _sequential(backend: object, conversations: int, turns: int) -> list[list[str]]:
    """The same conversations, each run to its end before the next starts."""
    out: list[list[str]] = []
    for c in range(conversations):
        history = [Message("system", f"{SYSTEM} Game {c + 1}.")]
        replies = []
        for turn in range(turns):
            history.append(Message("user", OBSERVATIONS[(turn + c) % len(OBSERVATIONS)]))
            reply = await backend.complete(ChatRequest(tuple(history), max_tokens=10))  # type: ignore[attr-defined]
            replies.append(reply.text)
            history.append(Message("assistant", reply.text))
        out.append(replies)
    return out


@pytest.fixture(scope="module")
def qwen_spec() -> ModelSpec:
    pytest.importorskip("llama_cpp", reason="pip install 'skillgrad[local]'")
    from skillgrad.models.catalog import Catalog

    if Catalog.default().status("qwen2.5-coder-0.5b").path is None:
        pytest.skip("skillgrad models pull qwen2.5-coder-0.5b")
    return ModelSpec(model="qwen2.5-coder-0.5b", n_ctx=2048)


@pytest.mark.slow
async def test_interleaved_conversations_reply_as_without_cache(qwen_spec: ModelSpec) -> None:
    from skillgrad.models.llamacpp import LlamaCppBackend

    plain = LlamaCppBackend(qwen_spec.model_copy(update={"options": {"kv_cache_mb": 0}}))
    reference = await _sequential(plain, 3, 3)
    plain_interleaved = await _interleaved(plain, 3, 3)
    del plain
    cached = LlamaCppBackend(qwen_spec)
    replies = await _interleaved(cached, 3, 3)
    assert replies == reference == plain_interleaved
    stats = cached.prefill
    # turns 1 park (a reply is in their history), turns 2 come back from their slot
    assert stats.calls == 9 and stats.parked == 6 and stats.restored == 3
    # only the new tokens of each turn were evaluated: the first turns (system prompt once in
    # full, twice after the shared part) plus ~observation + template per later turn
    assert stats.prompt_tokens_evaluated < 0.5 * stats.prompt_tokens_sent


@pytest.mark.slow
async def test_caps_evict_and_single_turn_calls_park_nothing(qwen_spec: ModelSpec) -> None:
    """The caps' mechanics. Replies are not compared here: with one slot every park evicts the
    other conversation and leaves holes in the KV buffer, and llama.cpp's sums depend slightly on
    where cells sit, so a near-tie may resolve differently (docs/models.md, "Determinism")."""
    from skillgrad.models.llamacpp import LlamaCppBackend

    one = LlamaCppBackend(qwen_spec.model_copy(update={"options": {"kv_sequences": 1}}))
    replies = await _interleaved(one, 2, 3)
    assert all(r.strip() for conversation in replies for r in conversation)
    stats = one.prefill
    # turns 1 and 2 of each conversation park (4), each park evicts the other conversation's
    # slot (3), so no turn ever finds its own slot again
    assert (stats.parked, stats.evicted, stats.restored) == (4, 3, 0)
    assert 0 < stats.parked_bytes <= stats.cap_bytes
    single = ChatRequest((Message("system", SYSTEM), Message("user", "Hi")), max_tokens=4)
    await one.complete(single)
    assert one.prefill.parked == stats.parked  # no reply in the history: nothing parked
    tiny = LlamaCppBackend(qwen_spec.model_copy(update={"options": {"kv_cache_mb": 1}}))
    assert len(await _interleaved(tiny, 2, 2)) == 2
    # 1 MiB holds ~85 tokens of this model: no conversation fits, nothing is parked
    assert tiny.prefill.parked == 0 and tiny.prefill.parked_bytes == 0
