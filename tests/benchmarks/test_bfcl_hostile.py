"""BFCL replies that parse as Python but break a naive reader (issue 24 §3): each gets a verdict
with feedback from ``score_reply``, never an exception. (Through ``skillgrad eval``:
``tests/test_hostile_output.py``.)"""

from __future__ import annotations

import pytest

from skillgrad.benchmarks.bfcl.parse import MAX_INT_BITS, parse_calls
from skillgrad.benchmarks.bfcl.score import score_reply

GOLD = [{"f": {"a": [1]}}]
DOCS = [{"name": "f", "parameters": {"properties": {"a": {"type": "integer"}}, "required": ["a"]}}]

CASES = {
    "attribute chain": ("f(a=" + ".".join(["x"] * 400) + ")", "nested more than 50 levels deep"),
    "call chain": ("f(a=g" + "()" * 400 + ")", "nested more than 50 levels deep"),
    "subscript chain": ("f(a=x" + "[0]" * 400 + ")", "nested more than 50 levels deep"),
    "1,200-term sum": ("f(a=" + "+".join(["1"] * 1200) + ")", "nested more than 50 levels deep"),
    "list as a dict key": ("f(a={[1]: 2})", "has a key that is not a string, number or tuple"),
    "tuple holding a list as a key": ("f(a={(1, [2]): 3})", "has a key that is not a string"),
    "4,000-digit hex integer": ("f(a=0x" + "f" * 4000 + ")", "bits is too large a number"),
    "huge decimal in a sum": ("f(a=1+" + "9" * 4000 + ")", "bits is too large a number"),
}


@pytest.mark.parametrize("kind", ["calls", "any_call", "no_call"])
@pytest.mark.parametrize("label", list(CASES))
def test_every_hostile_reply_gets_a_verdict_with_feedback(label: str, kind: str) -> None:
    reply, why = CASES[label]
    score = score_reply(reply, kind, GOLD if kind == "calls" else [], DOCS)  # type: ignore[arg-type]
    assert 0.0 <= score.value <= 1.0 and score.feedback
    if kind == "no_call":  # nothing readable was called: right for an irrelevance item
        assert score.passed
    else:
        assert not score.passed and why in score.feedback
        assert "the reply is not a list of function calls" in score.feedback


def test_the_same_replies_in_a_code_fence_get_a_verdict_too() -> None:
    for reply, _ in CASES.values():
        fenced = f"```python\n[{reply}]\n```"
        score = score_reply(fenced, "calls", GOLD, DOCS)  # type: ignore[arg-type]
        assert score.value == 0.0 and "Remove the ``` fence" in score.feedback


def test_ordinary_values_near_the_bounds_still_read() -> None:
    (call,) = parse_calls(
        "[f(a=" + "+".join(["1"] * 20) + ", b=" + str(2 ** (MAX_INT_BITS - 1)) + ")]"
    )
    assert call.args["a"] == 20 and call.args["b"] == 2 ** (MAX_INT_BITS - 1)
    (nested,) = parse_calls("[f(a={'k': [[1, 2], {'m': (3, 4)}]})]")
    assert nested.args["a"] == {"k": [[1, 2], {"m": (3, 4)}]}
