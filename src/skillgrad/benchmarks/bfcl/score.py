"""Scoring one BFCL reply: order-free matching of calls, partial credit, feedback in words.

Three kinds of item. ``calls``: the reply's calls are paired with the expected ones (any order,
one to one, the pairing with the most credit); each pair earns the share of its units (the
name, and each parameter that must be or was given) that are right; the value is the sum over
``max(expected, given)`` calls, 1.0 only when BFCL itself would accept the reply. ``no_call``
(irrelevance): 1.0 when the reply holds no call, else 0. ``any_call`` (relevance): 1.0 for at
least one call. A reply whose calls BFCL cannot read because they sit in a code fence gets half
of what they would earn, and says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from skillgrad.benchmarks.bfcl.check import CallCheck, check_call, gold_call
from skillgrad.benchmarks.bfcl.parse import Call, CallSyntaxError, fenced_calls, parse_calls
from skillgrad.types import Score

Kind = Literal["calls", "no_call", "any_call"]
FORMAT = "[func_name(param=value, ...), ...]"
FENCE_FACTOR = 0.5
MAX_FEEDBACK = 1200
Gold = Sequence[Mapping[str, Mapping[str, list[Any]]]]


def read_reply(output: str) -> tuple[list[Call] | None, bool, str]:
    """(calls or None, whether BFCL itself can read them, why not)."""
    try:
        return parse_calls(output), True, ""
    except CallSyntaxError as exc:
        why = str(exc)
    return fenced_calls(output), False, why


def score_reply(output: str, kind: Kind, gold: Gold, docs: Sequence[Mapping[str, Any]]) -> Score:
    """Score ``output`` for an item of ``kind`` with expected calls ``gold`` (BFCL's
    ``ground_truth``: ``[{name: {param: [possible values]}}]``) and function ``docs``."""
    calls, strict, why = read_reply(output)
    if kind == "no_call":
        return _no_call(calls, strict)
    if kind == "any_call":
        return _any_call(calls, strict, why, output)
    if calls is None:
        return Score(0.0, False, _unreadable(why, output))
    return _calls(calls, strict, gold, {str(d.get("name")): dict(d) for d in docs})


def _no_call(calls: list[Call] | None, strict: bool) -> Score:
    if not calls:
        return Score(1.0, True, "right: no function fits this question, and none was called")
    where = "" if strict else " (inside a code block, which still counts as a call)"
    return Score(
        0.0,
        False,
        f"none of the given functions fits this question, so the reply must call none; it "
        f"called {_shown(calls)}{where}. Say in words that no function applies instead.",
    )


def _any_call(calls: list[Call] | None, strict: bool, why: str, output: str) -> Score:
    if calls and strict:
        return Score(1.0, True, f"right: the question is answerable and {_shown(calls)} was called")
    if calls:
        return Score(FENCE_FACTOR, False, f"{_fence_note()}; calls: {_shown(calls)}")
    return Score(
        0.0,
        False,
        "a given function fits this question, so the reply must call it in the format "
        f"{FORMAT}; {_unreadable(why, output) if why else 'the reply was an empty list'}",
    )


def _calls(calls: list[Call], strict: bool, gold: Gold, docs: dict[str, dict[str, Any]]) -> Score:
    expected = [(name, dict(params)) for entry in gold for name, params in entry.items()]
    grid = [
        [check_call(c, name, params, docs.get(name, {})) for c in calls]
        for name, params in expected
    ]
    pairs = best_pairs([[cell.credit for cell in row] for row in grid])
    total = sum(grid[g][m].credit for g, m in pairs)
    right = sum(grid[g][m].ok for g, m in pairs)
    value = total / max(len(expected), len(calls), 1)
    passed = strict and right == len(expected) == len(calls)
    notes = [f"{right} of {len(expected)} expected call(s) right"]
    if not strict:  # first: the optimizer reads only the start of long feedback
        value *= FENCE_FACTOR
        notes.append(_fence_note())
    notes += _call_notes(calls, expected, grid, dict(pairs))
    if passed:
        return Score(1.0, True, "right: " + "; ".join(c.render() for c in calls))
    return Score(min(value, 0.99), False, _clip("; ".join(notes)))


def _call_notes(
    calls: list[Call],
    expected: list[tuple[str, dict[str, list[Any]]]],
    grid: list[list[CallCheck]],
    pairs: dict[int, int],
) -> list[str]:
    notes = []
    for g, (name, params) in enumerate(expected):
        if g not in pairs:
            notes.append(f"missing call: expected {gold_call(name, params)}")
        elif not grid[g][pairs[g]].ok:
            call = calls[pairs[g]]
            hint = "; arguments must be given as name=value" if call.positional else ""
            notes.append(f"{call.render()}: {', '.join(grid[g][pairs[g]].problems)}{hint}")
    matched = set(pairs.values())
    extra = [c for i, c in enumerate(calls) if i not in matched]
    if extra:
        names = ", ".join(sorted({n for n, _ in expected}))
        notes.append(f"not expected: {_shown(extra)} (this question needs calls to: {names})")
    return notes


def best_pairs(credit: list[list[float]]) -> list[tuple[int, int]]:
    """The one-to-one pairing of expected calls (rows) with given calls (columns) that has
    the most total credit; pairs with no credit are left out. Exact, by dynamic programming
    over sets of rows: BFCL's items expect at most 8 calls, so 2**8 states."""
    best: dict[int, tuple[float, tuple[tuple[int, int], ...]]] = {0: (0.0, ())}
    columns = len(credit[0]) if credit else 0
    for m in range(columns):
        step = dict(best)
        for used, (total, pairs) in best.items():
            for g, row in enumerate(credit):
                if used >> g & 1 or row[m] <= 0:
                    continue
                key, cand = used | 1 << g, (total + row[m], (*pairs, (g, m)))
                if key not in step or cand[0] > step[key][0]:
                    step[key] = cand
        best = step
    return list(max(best.values(), key=lambda v: v[0])[1])


def _unreadable(why: str, output: str) -> str:
    head = output.strip()[:80] or "(empty)"
    fence = " Remove the ``` fence." if "```" in output else ""
    return f"the reply is not a list of function calls {FORMAT}: {why}.{fence} It began: {head!r}"


def _fence_note() -> str:
    return (
        "format: the calls were inside a ``` code block; BFCL reads only the bare list "
        f"{FORMAT} and scores this reply 0 (here: half credit)"
    )


def _shown(calls: list[Call]) -> str:
    return _clip(", ".join(c.render() for c in calls), 300)


def _clip(text: str, limit: int = MAX_FEEDBACK) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


__all__ = ["FENCE_FACTOR", "FORMAT", "Kind", "best_pairs", "read_reply", "score_reply"]
