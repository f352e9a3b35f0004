"""Contrast rules: what the optimizer writes from a failed and a passing attempt, then and now.

A run records every contrast call (``calls.sqlite``, stage ``contrast``): the pairs it showed
and the rules the optimizer wrote. This bench re-asks each recorded first ask (not a re-ask)
with the system prompt the current code renders for it (``prompts/contrast_system.md`` with the
kind's ``$compare``: an episode's procedure, ``contrast_episodes.md``; a reply's form and
content, ``contrast_replies.md``), the same user prompt, schema, seed and temperature, through
the embedded backend, and prints the recorded and the new rules side by side with a tally of
what the screens make of them:

- ``step``: names a numbered step of one shown attempt (``screens.specific.attempt_step``),
- ``recited``: repeats a sentence of the optimizer's instructions (``rules.instruction_copied``),
- ``third person``: speaks about "the target" / "the model" / "the agent" instead of to it.

    flock /tmp/skillgrad-model.lock .venv/bin/python bench/bench_contrast_rules.py \\
        SWEEP_OR_RUN_DIR... --model qwen2.5-coder-1.5b --threads 1

Reads the run directories only; writes nothing. The user prompt is the recorded one: a rule's
quality is compared on the same pairs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

from skillgrad.models.llamacpp import LlamaCppBackend
from skillgrad.models.spec import ModelSpec
from skillgrad.prompts import render_prompt
from skillgrad.train.rules import instruction_copied
from skillgrad.train.screens.specific import attempt_step
from skillgrad.types import ChatRequest, Message

THIRD_PERSON = re.compile(r"\b(?:the|a)\s+(?:target|model|agent)\b", re.IGNORECASE)
EPISODE = "### episode "  # the episode view's block header (prompts/trajectory_episode.md)


def recorded(run_dirs: list[Path]) -> list[tuple[str, dict[str, Any], list[str]]]:
    """(run, request, recorded rules) of every first contrast ask under ``run_dirs``."""
    out = []
    for root in run_dirs:
        for db in sorted({*root.glob("calls.sqlite"), *root.glob("*/calls.sqlite")}):
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
                rows = con.execute(
                    "select request, response from calls where stage = 'contrast'"
                ).fetchall()
            for request, response in rows:
                req = json.loads(request)
                if len(req["messages"]) != 2:  # a re-ask: its first ask is measured
                    continue
                out.append((str(db.parent), req, rules_of(json.loads(response)["text"])))
    return out


def rules_of(text: str) -> list[str]:
    try:
        return [str(r.get("rule", "")) for r in json.loads(text).get("rules", [])]
    except (ValueError, AttributeError):
        return []


def system_now(user: str) -> str:
    compare = "contrast_episodes" if EPISODE in user else "contrast_replies"
    return render_prompt("contrast_system", compare=render_prompt(compare).rstrip("\n"))


def tally(rules: list[str], counts: Counter[str]) -> None:
    for rule in rules:
        counts["rules"] += 1
        counts["step"] += attempt_step(rule, "") is not None
        counts["recited"] += instruction_copied(rule) is not None
        counts["third person"] += THIRD_PERSON.search(rule) is not None


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("run_dirs", type=Path, nargs="+", help="run or sweep directories")
    p.add_argument("--model", default="qwen2.5-coder-1.5b")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    backend = LlamaCppBackend(ModelSpec(model=args.model, n_ctx=8192, n_threads=args.threads))
    then: Counter[str] = Counter()
    now: Counter[str] = Counter()
    calls = recorded(args.run_dirs)
    print(f"{len(calls)} recorded contrast calls")
    for run, req, old in calls:
        user = req["messages"][1]["content"]
        asked = ChatRequest(
            (Message("system", system_now(user)), Message("user", user)),
            temperature=req["temperature"],
            max_tokens=req["max_tokens"],
            seed=req["seed"],
            response_schema=req["response_schema"],
        )
        new = rules_of((await backend.complete(asked)).text)
        tally(old, then)
        tally(new, now)
        kind = "episodes" if EPISODE in user else "replies"
        print(f"\n{run} ({kind})")
        for rule in old:
            print(f"  then: {rule}")
        for rule in new:
            print(f"  now:  {rule}")
    for name, c in (("then", then), ("now", now)):
        cells = ", ".join(f"{k} {c[k]}" for k in ("step", "recited", "third person"))
        print(f"{name}: {c['rules']} rules; {cells}")


if __name__ == "__main__":
    asyncio.run(main())
