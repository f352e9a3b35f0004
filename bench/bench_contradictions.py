"""Contradictions inside a skill (``dedup.skill_contradictions``): the pairwise scan every line
against every other, and the indexed scan that compares only lines sharing a content word.

Skills are generated (seeded) like learned ones: sections of rules ("Always ...", "Never ...",
"Do not ...") over a vocabulary of task words, some rules restated with the opposite polarity
(the contradictions to find), some near-repeats, a worked example. Both scans must return the
same pairs up to the cap (``MAX_CONTRADICTIONS``; the bench fails otherwise); the pairwise scan
is skipped past ``--max-pairwise`` lines (minutes to hours), then reported as not measured.

    python bench/bench_contradictions.py --lines 60 400 5000
"""

from __future__ import annotations

import argparse
import random
import time

from skillgrad.train.aggregate import is_conflict
from skillgrad.train.screens.dedup import (
    MAX_CONTRADICTIONS,
    _as_rule,
    _contradictions,
    skill_lines,
)

VERBS = (
    "answer reply write give return use state quote list name format end start keep check "
    "cite copy count sort round spell translate convert compare explain repeat mark"
).split()
OBJECTS = (
    "the final answer|one word|the label|a full sentence|the reference|the city name|"
    "the date|the number|a JSON object|the function call|the unit|the quoted command|"
    "the tool output|an explanation|the summary|the title|the options|the score|the headline|"
    "the product code|the customer name|the invoice total|the error message|the file path|"
    "the currency|the country|the chosen option|the step count|the answer key|the table row"
).split("|")
TAILS = (
    "in lower case|in upper case|before the reasoning|after the reasoning|on its own line|"
    "without punctuation|with a trailing period|when the question is ambiguous|"
    "for every item|in the first line|exactly as given|in ISO format|as digits|"
    "when the user asks twice|if the input is empty|unless told otherwise|in the last line|"
    "inside double quotes|with two decimals|in metric units|before calling a tool|"
    "after the tool returns|in a bulleted list|as a single token|in British spelling"
).split("|")
AFFIRM = ("Always", "Please", "You must", "Make sure to")
NEGATE = ("Never", "Do not", "Avoid:", "No need to")


def rule(rng: random.Random, negated: bool) -> str:
    lead = rng.choice(NEGATE if negated else AFFIRM)
    return f"- {lead} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(TAILS)}."


def generated_skill(n_lines: int, seed: int = 0) -> str:
    """A seeded skill of about ``n_lines`` lines (see the module doc)."""
    rng = random.Random(seed)
    out, rules = ["# Task skill"], []
    while len(out) < n_lines:
        roll = rng.random()
        if roll < 0.06:
            out += ["", f"## Section {len(out)}", ""]
        elif roll < 0.09 and rules:  # a rule restated with the other polarity
            text = rng.choice(rules)
            for a, b in zip(AFFIRM + NEGATE, NEGATE + AFFIRM, strict=True):
                if text.startswith(f"- {a} "):
                    out.append(text.replace(f"- {a} ", f"- {b} ", 1))
                    break
        elif roll < 0.13 and rules:  # a near-repeat: one word changed
            out.append(rng.choice(rules).replace(" the ", " a ", 1))
        else:
            rules.append(rule(rng, rng.random() < 0.3))
            out.append(rules[-1])
    out += ["", "## Examples", "", "Input: Word: apple", "Reply: APPLE"]
    return "\n".join(out)


def pairwise(skill: str) -> list[tuple[str, str]]:
    """Every line against every later line (the scan before the index)."""
    lines = skill_lines(skill)
    return [
        (a, b)
        for i, a in enumerate(lines)
        for b in lines[i + 1 :]
        if is_conflict(_as_rule(a), _as_rule(b))
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, nargs="+", default=[60, 400, 5000])
    parser.add_argument("--max-pairwise", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print("| lines | pairs found | pairwise | indexed | indexed, cached (2nd call) |")
    print("| --- | --- | --- | --- | --- |")
    for n in args.lines:
        skill = generated_skill(n, args.seed)
        _contradictions.cache_clear()
        start = time.perf_counter()
        new = list(_contradictions(skill))
        indexed = time.perf_counter() - start
        start = time.perf_counter()
        _contradictions(skill)
        cached = time.perf_counter() - start
        old_time = "not measured"
        if n <= args.max_pairwise:
            start = time.perf_counter()
            old = pairwise(skill)[:MAX_CONTRADICTIONS]
            old_time = f"{time.perf_counter() - start:.2f} s"
            if old != new:
                raise SystemExit(f"{n} lines: the scans differ: {len(old)} vs {len(new)} pairs")
        print(f"| {n} | {len(new)} | {old_time} | {indexed:.3f} s | {cached * 1e6:.0f} us |")


if __name__ == "__main__":
    main()
