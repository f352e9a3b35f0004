"""One call of the batched llama.cpp decoder: prompt, sampler and stop rules (imports llama_cpp).

The prompt tokens, stop strings and sampler are the ones llama-cpp-python's own
``create_chat_completion`` would use (its chat handler is run against a stand-in that captures
the completion call), and ``Job.take`` ends a reply exactly where ``Llama._create_completion``
does, so a call decoded in a batch returns what the library returns for it alone.
"""

from __future__ import annotations

import concurrent.futures
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from llama_cpp import Llama
from llama_cpp import llama_cpp as lib
from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

# llama-cpp-python's defaults for its prompt-lookup draft model
DRAFT_NGRAM = 2
DRAFT_TOKENS = 10


class PromptTooLong(ValueError):
    """The prompt does not fit the context window (``Job.prepare``)."""


@dataclass(frozen=True)
class Reply:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str


class _Captured(Exception):  # control flow: carries the captured arguments out
    def __init__(self, kwargs: dict[str, Any]) -> None:
        super().__init__("captured")
        self.kwargs = kwargs


class _Capture:
    """Stands in for the ``Llama`` a chat handler is given: everything is the real model's,
    except that the completion call is captured instead of run."""

    def __init__(self, llm: Llama) -> None:
        self._llm = llm

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llm, name)

    def create_completion(self, **kwargs: Any) -> Any:
        raise _Captured(kwargs)


def completion_args(llm: Llama, chat: dict[str, Any]) -> dict[str, Any]:
    """The arguments ``llm.create_chat_completion(**chat)`` passes to ``create_completion``:
    the prompt as tokens, the stop strings (the template's end token added), the grammar."""
    try:
        Llama.create_chat_completion(_Capture(llm), **chat)  # type: ignore[arg-type]
    except _Captured as captured:
        return captured.kwargs
    raise RuntimeError("the chat handler did not call create_completion")


@dataclass(eq=False)
class Job:
    """A call in the decoder: what it asks for, where it stands, and its future."""

    chat: dict[str, Any]
    park: bool  # a conversation: keep its tokens parked for its next turn
    future: concurrent.futures.Future[Reply] = field(default_factory=concurrent.futures.Future)
    prompt: list[int] = field(default_factory=list)
    stop: list[bytes] = field(default_factory=list)
    max_tokens: int = 0
    sampler: Any = None
    seq: int = -1  # its KV sequence id while decoding
    tokens: list[int] = field(default_factory=list)  # evaluated: their cells are in the KV cache
    completion: list[int] = field(default_factory=list)
    pending: int = -1  # the last sampled token, evaluated at the next step
    _multibyte: int = 0

    @property
    def cancelled(self) -> bool:
        return self.future.cancelled()

    def prepare(self, llm: Llama, n_ctx: int) -> None:
        """Tokens, stops, token limit and sampler, as ``Llama._create_completion`` sets them;
        ValueError when the prompt does not fit the context window."""
        args = completion_args(llm, self.chat)
        self.tokens, self.completion, self.pending, self._multibyte = [], [], -1, 0
        self.prompt = list(args["prompt"])
        if len(self.prompt) >= n_ctx:
            raise PromptTooLong(
                f"Requested tokens ({len(self.prompt)}) exceed context window of {n_ctx}"
            )
        self.stop = [s.encode("utf-8") for s in args.get("stop") or []]
        limit = args.get("max_tokens")
        if limit is None or limit <= 0:
            limit = n_ctx - len(self.prompt)
        self.max_tokens = min(limit, n_ctx - len(self.prompt))
        llm.set_seed(args["seed"])
        self.sampler = llm._init_sampler(
            top_k=args["top_k"],
            top_p=args["top_p"],
            min_p=args["min_p"],
            typical_p=args["typical_p"],
            temp=args["temperature"],
            repeat_penalty=args["repeat_penalty"],
            frequency_penalty=args["frequency_penalty"],
            presence_penalty=args["presence_penalty"],
            mirostat_mode=args["mirostat_mode"],
            mirostat_tau=args["mirostat_tau"],
            mirostat_eta=args["mirostat_eta"],
            grammar=args.get("grammar"),
        )

    def take(self, llm: Llama, token: int) -> Reply | None:
        """Add a sampled token; the reply when it ends the call (end of generation, a stop
        string, the token limit), else None and the token is ``pending``."""
        if lib.llama_vocab_is_eog(llm._model.vocab, token):
            return self._reply(llm.detokenize(self.completion, prev_tokens=self.prompt), "stop")
        self.completion.append(token)
        self.pending = token
        text = llm.detokenize(self.completion, prev_tokens=self.prompt)
        for k, char in enumerate(text[-3:]):  # an incomplete UTF-8 character: decode more
            k = 3 - k
            for num, pattern in [(2, 192), (3, 224), (4, 240)]:
                if num > k and pattern & char == pattern:
                    self._multibyte = num - k
        if self._multibyte > 0:
            self._multibyte -= 1
            return None
        stops = [s for s in self.stop if s in text]
        if stops:
            return self._reply(text[: text.index(stops[0])], "stop")
        if len(self.completion) >= self.max_tokens:
            return self._reply(text, "length")
        return None

    def _reply(self, text: bytes, reason: str) -> Reply:
        return Reply(
            text.decode("utf-8", errors="ignore"), len(self.prompt), len(self.completion), reason
        )

    def draft(self, limit: int) -> list[int]:
        """Up to ``limit`` tokens proposed by copying what followed the last tokens' earlier
        occurrence (prompt lookup); empty when nothing matches."""
        if limit <= 0:
            return []
        ids = np.asarray([*self.tokens, self.pending], dtype=np.intc)
        found = LlamaPromptLookupDecoding.find_candidate_pred_tokens(
            ids, DRAFT_NGRAM, min(DRAFT_TOKENS, limit)
        )
        return [int(t) for t in found]


__all__ = ["Job", "Reply", "completion_args"]
