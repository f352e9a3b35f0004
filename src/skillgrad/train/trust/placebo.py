"""The placebo skill: text as long as a trained skill (in the target's tokens) that says nothing
about any task. A control arm (``train.controls``, ``skillgrad sweep --controls``): a gain the
placebo also gives came from having a system prompt of that length at all, not from what the
skill says.

Deterministic and shipped: the same length gives the same text, built by cycling through
``SENTENCES`` (statements about this document itself: no instruction, no format, no domain
word) and cutting the last sentence at a word to land on the length. ``placebo_skill`` is the
generator; ``docs/gate.md`` shows its output.
"""

from __future__ import annotations

from collections.abc import Callable

from skillgrad.skill.document import approx_tokens

SENTENCES = (
    "This document is a placeholder of a set length.",
    "Its lines were written to carry no guidance of any kind.",
    "Each sentence states only that it is part of this text.",
    "Nothing here refers to a question, an answer or a topic.",
    "The paragraphs repeat in a fixed order until the length is reached.",
    "Reading it changes nothing about what is asked or how to reply.",
)


def placebo_skill(tokens: int, count: Callable[[str], int] = approx_tokens) -> str:
    """A placebo of ``tokens`` tokens as ``count`` measures them (the target's tokenizer in a
    run); ``""`` for 0. Never shorter than asked by more than one word's tokens."""
    if tokens <= 0:
        return ""
    words: list[str] = []
    i = 0
    while count(_text(words)) < tokens:  # whole sentences until long enough
        words += SENTENCES[i % len(SENTENCES)].split()
        i += 1
    low, high = 0, len(words)  # the shortest prefix of words that is long enough
    while low < high:
        mid = (low + high) // 2
        if count(_text(words[:mid])) >= tokens:
            high = mid
        else:
            low = mid + 1
    return _text(words[:low])


def _text(words: list[str]) -> str:
    """Sentences one to a line, like the rules of a skill."""
    text = " ".join(words)
    return text.replace(". ", ".\n") + "\n"


__all__ = ["SENTENCES", "placebo_skill"]
