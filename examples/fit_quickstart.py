"""``skillgrad.fit`` in a plain script, and ``await skillgrad.afit`` inside an event loop.

The task: answer each word in UPPER CASE. Both models here are plain Python functions of the
request (``provider: function``), so this runs offline in a second; swap in real models with
``optimizer="openai:gpt-4o-mini", target="openai:gpt-4o-mini"`` (or any "provider:model").

    python examples/fit_quickstart.py            # plain script: skillgrad.fit(...)
    python examples/fit_quickstart.py --async    # in asyncio.run(...): await skillgrad.afit(...)
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from typing import Any

import skillgrad
from skillgrad.testing import rules_reply
from skillgrad.types import ChatRequest

WORDS = "apple river stone cloud maple tiger pencil garden silver rocket lemon candle".split()
RULE = "Always answer with the word in UPPERCASE."


def target(request: ChatRequest) -> str:
    """A fake target: it follows the skill (its system prompt) when the skill says UPPERCASE."""
    skill = next((m.content for m in request.messages if m.role == "system"), "")
    word = request.messages[-1].content.strip()
    return word.upper() if "UPPERCASE" in skill else word


def optimizer(request: ChatRequest) -> dict[str, Any]:
    """A fake optimizer: every reflection proposes the one rule that fixes the failures
    (the reply format every reflection asks for: rules first)."""
    return rules_reply(RULE)


def exact(output: str, item: skillgrad.Item) -> bool:
    """The scorer: a plain function of (output, item) returning a bool."""
    return output.strip() == item.reference


def data(words: list[str], split: str) -> list[dict[str, Any]]:
    return [{"id": f"{split}-{w}", "input": w, "reference": w.upper()} for w in words]


OPTIONS: dict[str, Any] = {
    "num_epochs": 1,
    "batch_size": 4,
    "semantic_merge": False,
    "rank_with_optimizer": False,
    "use_slow_update": False,
    "use_meta_skill": False,
}


def main(output_dir: str) -> skillgrad.FitResult:
    return skillgrad.fit(
        data(WORDS[:4], "train"),
        data(WORDS[4:8], "val"),
        data(WORDS[8:], "test"),
        scorer=exact,
        optimizer=optimizer,
        target=target,
        output_dir=output_dir,
        **OPTIONS,
    )


async def amain(output_dir: str) -> skillgrad.FitResult:
    return await skillgrad.afit(
        data(WORDS[:4], "train"),
        data(WORDS[4:8], "val"),  # no test split: it is optional
        scorer=exact,
        optimizer=optimizer,
        target=target,
        output_dir=output_dir,
        **OPTIONS,
    )


if __name__ == "__main__":
    given = sys.argv[2] if len(sys.argv) > 2 else ""
    out = given or tempfile.mkdtemp(prefix="skillgrad-fit-")
    result = asyncio.run(amain(out)) if "--async" in sys.argv else main(out)
    s = result.summary
    print(f"val {s['val_initial']:.2f} -> {s['val_best']:.2f}; test best {s['test_best']}")
    print(f"run directory: {result.run_dir}")
    print(result.best_skill)
