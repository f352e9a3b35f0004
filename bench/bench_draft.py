"""Embedded model: prompt-lookup drafting (``models.<role>.draft``) on optimizer calls.

Runs the same optimizer calls at temperature 0 on two freshly loaded backends, without and with
drafting, one call at a time, and reports per call the tokens generated, the decode steps, the
decode thread's CPU seconds (with one llama.cpp thread: all the model's work, whatever else the
cores run) and wall seconds, and whether the replies are identical. The calls: every optimizer
call of a run's ledger (``--ledger runs/<run>/calls.sqlite``: the prompts a run really sent,
replayed with their schema) plus a revision call built here from the project's own revise
prompts, a hand-written skill and failed trajectories (its reply quotes the skill's lines).

    flock /tmp/skillgrad-model.lock .venv/bin/python bench/bench_draft.py \\
        --model qwen2.5-coder-1.5b --threads 1 --ledger runs/toy/calls.sqlite
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path
from string import Template

from skillgrad.models.llamacpp import LlamaCppBackend
from skillgrad.models.spec import ModelSpec
from skillgrad.types import ChatRequest, Completion, Message

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = {
    "type": "object",
    "properties": {
        "rules": {
            "type": "array",
            "maxItems": 3,
            "items": {
                "type": "object",
                "properties": {"rule": {"type": "string"}, "replaces": {"type": "string"}},
                "required": ["rule", "replaces"],
            },
        }
    },
    "required": ["rules"],
}
FAILURES = """### item dev-3: score 0.00 (FAIL)
Commands: 'Read the instructions book' -> I'm not sure what you mean.
'take the red apple' -> I'm not sure what you mean.
Feedback: the game accepts only `read instructions book` and `take <object>`.

### item dev-5: score 0.00 (FAIL)
Commands: 'read instructions book' -> The current task is to take the blue key.
'take key' -> You can't see that here.
Feedback: take the object by its full name exactly as the room description writes it."""


def revise_call() -> ChatRequest:
    prompts = ROOT / "src/skillgrad/prompts"
    skill = (ROOT / "docs/hand-written-skills/twx-peck.md").read_text(encoding="utf-8")
    user = Template((prompts / "revise_user.md").read_text(encoding="utf-8")).safe_substitute(
        skill=skill,
        rules='- Type exactly one of these two commands, in lower case, with no "the" or "a":\n'
        "- `take <object>`: the object's name exactly as the room description writes it",
        contradictions="(none)",
        rejected="(none)",
        n_items=2,
        step=3,
        trajectories=FAILURES,
        max_edits=3,
    )
    system = (prompts / "revise_system.md").read_text(encoding="utf-8")
    messages = (Message("system", system), Message("user", user))
    return ChatRequest(messages, max_tokens=400, response_schema=SCHEMA)


def ledger_calls(path: Path) -> list[ChatRequest]:
    """The optimizer calls a run's ledger holds, as they were sent."""
    with tempfile.TemporaryDirectory() as tmp:  # a copy: the run's ledger stays untouched
        copy = Path(tmp, "calls.sqlite")
        shutil.copyfile(path, copy)
        db = sqlite3.connect(copy)
        rows = db.execute("SELECT request FROM calls WHERE role = 'optimizer' ORDER BY rowid")
        rows = rows.fetchall()
        db.close()
    calls = []
    for (raw,) in rows:
        d = json.loads(raw)
        messages = tuple(Message(m["role"], m["content"]) for m in d["messages"])
        calls.append(
            ChatRequest(
                messages,
                temperature=d["temperature"],
                max_tokens=d["max_tokens"],
                seed=d["seed"],
                response_schema=d.get("response_schema"),
                stop=tuple(d.get("stop") or ()),
            )
        )
    return calls


async def run(
    spec: ModelSpec, calls: list[ChatRequest]
) -> list[tuple[Completion, int, float, float]]:
    backend = LlamaCppBackend(spec)
    out = []
    for call in calls:
        steps, cpu, start = backend.decode_steps, backend.decode_cpu_s, time.perf_counter()
        reply = await backend.complete(call)
        wall = time.perf_counter() - start
        out.append((reply, backend.decode_steps - steps, backend.decode_cpu_s - cpu, wall))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--ledger", type=Path, help="a run's calls.sqlite: replay its optimizer calls"
    )
    args = parser.parse_args()
    calls = [revise_call(), *(ledger_calls(args.ledger) if args.ledger else [])]
    spec = ModelSpec(model=args.model, n_ctx=4096, n_threads=args.threads)
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    plain = asyncio.run(run(spec, calls))
    drafted = asyncio.run(run(spec.model_copy(update={"draft": "prompt_lookup"}), calls))
    print("call | tokens | steps off/on | CPU s off/on | speedup (CPU) | wall s off/on | same")
    totals = [0.0, 0.0, 0.0, 0.0]
    for i, ((a, sa, ca, wa), (b, sb, cb, wb)) in enumerate(zip(plain, drafted, strict=True)):
        same = (a.text, a.usage, a.finish_reason) == (b.text, b.usage, b.finish_reason)
        totals = [totals[0] + ca, totals[1] + cb, totals[2] + wa, totals[3] + wb]
        print(
            f"{i} | {a.usage.completion_tokens} | {sa}/{sb} | {ca:.1f}/{cb:.1f} | "
            f"{ca / cb:.2f}x | {wa:.1f}/{wb:.1f} | {same}"
        )
    print(
        f"all | | | {totals[0]:.1f}/{totals[1]:.1f} | {totals[0] / totals[1]:.2f}x | "
        f"{totals[2]:.1f}/{totals[3]:.1f} | load average after: {os.getloadavg()[0]:.1f}"
    )
    print("first reply:", plain[0][0].text[:300])


if __name__ == "__main__":
    main()
