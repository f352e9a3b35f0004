"""The rules of BFCL's AST checker for one call, re-written, with feedback in words.

BFCL (``bfcl_eval/eval_checker/ast_eval/ast_checker.py``, Apache-2.0) accepts a call when: the
function name is the expected one; every required parameter is given; every given parameter is
documented *and* in the possible answer; every possible-answer parameter without ``""`` among
its values is given; and each value has the documented type and is among the possible values.
Types are Python's (``bool`` is not an ``int``); an ``int`` is accepted for a ``float``; a tuple
for a ``tuple``; a value of the possible answers' own type is a "variable" compared as is.
Strings (alone, in lists, in dicts) are compared after ``standardize``; lists in order; dicts
key by key. Where BFCL stops at the first error, this checker notes every one, for feedback and
partial credit; the accept/refuse decision is the same (verified on every shipped answer).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, cast

from skillgrad.benchmarks.bfcl.parse import Call

TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
}
_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "float": "a number",
    "boolean": "True or False",
    "array": "a list",
    "tuple": "a list",
    "dict": "a dict",
    "any": "a string",
}
_IGNORED = re.compile(r"[ ,./\-_*^]")
STRING_RULE = "strings match ignoring case, spaces and the characters , . / - _ * ^"


def standardize(text: str) -> str:
    """BFCL's string normal form: no spaces or ``,./-_*^``, lower case, ``'`` as ``"``."""
    return _IGNORED.sub("", text).lower().replace("'", '"')


@dataclass(frozen=True)
class CallCheck:
    """One model call against one expected call: ``credit`` is the share of right units (the
    function name and each parameter; 0 for another function) and ``problems`` what is wrong,
    in words."""

    credit: float
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def check_call(
    call: Call, name: str, possible: dict[str, list[Any]], doc: dict[str, Any]
) -> CallCheck:
    """``call`` against the expected call ``name`` with ``possible`` values per parameter;
    ``doc`` is the function's documentation (``parameters.properties`` / ``.required``)."""
    if call.name != name:
        return CallCheck(0.0, (f"calls `{call.name}`, expected `{name}`",))
    params = doc.get("parameters") or {}
    props: dict[str, Any] = params.get("properties") or {}
    required: list[str] = params.get("required") or []
    problems: list[str] = []
    # what the credit is shared over: the parameters that must be given, and those that were;
    # an optional one rightly left out says nothing about the answer
    units = {p for p, values in possible.items() if "" not in values}
    units |= set(call.args) | set(required)
    wrong: set[str] = set()
    for param in required:
        if param not in call.args:
            wrong.add(param)
            problems.append(f"missing required parameter `{param}`")
    for param, value in call.args.items():
        problem = _param_problem(param, value, possible, props, name)
        if problem:
            wrong.add(param)
            problems.append(problem)
    for param, values in possible.items():
        if param not in call.args and "" not in values and param not in wrong:
            wrong.add(param)
            problems.append(f"missing parameter `{param}`: must be {expected_words(values)}")
    # the name counts as one unit, so the right function earns something even with every
    # argument wrong; each problem is about one unit, so credit is 1.0 exactly when none is
    credit = (1 + len(units) - len(wrong)) / (1 + len(units))
    return CallCheck(credit, tuple(problems))


def _param_problem(
    param: str, value: Any, possible: dict[str, list[Any]], props: dict[str, Any], name: str
) -> str | None:
    if param not in props:
        known = ", ".join(props) or "none"
        return f"unexpected parameter `{param}` (`{name}` takes: {known})"
    if param not in possible:
        return f"parameter `{param}` is not called for here: leave it out"
    return value_problem(param, value, possible[param], props[param])


def value_problem(param: str, value: Any, possible: list[Any], spec: dict[str, Any]) -> str | None:
    """Why ``value`` is refused for ``param`` (documented as ``spec``), or None when accepted."""
    kind = spec.get("type")
    py = TYPES.get(str(kind))
    items = spec.get("items") if kind in ("array", "tuple") else None
    nested = TYPES.get(str(items.get("type"))) if isinstance(items, dict) else None
    if kind == "tuple" and type(value) is tuple:
        value = list(value)  # gold tuples went through JSON: they are lists
    if kind == "float" and type(value) is int:
        value = float(value)
    variable = type_verdict(value, possible, py, nested)
    if variable is None:
        want = _WORDS.get(str(kind), str(kind))
        if nested is not None and type(value) is list:
            want += f" of {_WORDS.get(str(items.get('type')), 'values')}"  # type: ignore[union-attr]
        return f"`{param}` must be {want}; got {value!r} ({type(value).__name__})"
    if variable or py is None:
        ok = value in possible
    elif py is dict:
        ok = dict_ok(value, possible)
    elif py is list and nested is dict:
        ok = dicts_ok(value, possible)
    elif py is str:
        ok = standardize(value) in [standardize(p) for p in possible if type(p) is str]
    elif py is list:
        ok = list_ok(value, possible)
    else:
        ok = value in possible
    if ok:
        return None
    rule = f" ({STRING_RULE})" if py is str or (py is list and nested is str) else ""
    return f"`{param}` must be {expected_words(possible)}; got {value!r}{rule}"


def type_verdict(
    value: Any, possible: list[Any], py: type | None, nested: type | None
) -> bool | None:
    """None: the type is refused; else whether the value is a "variable" (it has the possible
    answers' own type rather than the documented one, and is compared as is). One level of
    list items is checked, as in BFCL."""
    known = next((type(p) for p in possible if p != ""), None)
    variable = known is not None and known is not py
    if type(value) is py:
        if nested is None:
            return variable
        items = cast(list[Any], value)  # py is list whenever nested is set
        for answer in possible:
            if not isinstance(answer, list) or all(
                type_verdict(v, answer, nested, None) is not None for v in items
            ):
                return variable
    if known is not None and type(value) is known:
        return True
    return None


def _std(value: Any) -> Any:
    return standardize(value) if type(value) is str else value


def list_ok(value: list[Any], possible: list[Any]) -> bool:
    """In order, strings standardized; an optional ``""`` stands for the empty list (BFCL)."""
    got = [_std(v) for v in value]
    for answer in possible:
        if answer == "":
            answer = []
        if isinstance(answer, list) and got == [_std(v) for v in answer]:
            return True
    return False


def dict_ok(value: dict[Any, Any], possible: list[Any]) -> bool:
    """Some possible dict: every given key known and its value among that key's values, every
    key without ``""`` among its values given."""
    for answer in possible:
        if not isinstance(answer, dict):
            continue
        given = all(
            key in answer and _std(v) in [_std(x) for x in _as_list(answer[key])]
            for key, v in value.items()
        )
        if given and all(key in value or "" in _as_list(vals) for key, vals in answer.items()):
            return True
    return False


def dicts_ok(value: list[Any], possible: list[Any]) -> bool:
    """A list of dicts: same length as a possible list, each dict checked against its partner."""
    for answer in possible:
        answer = [] if answer == "" else answer
        if not isinstance(answer, list) or len(answer) != len(value):
            continue
        if all(isinstance(v, dict) and dict_ok(v, [a]) for v, a in zip(value, answer, strict=True)):
            return True
    return False


def _as_list(values: Any) -> list[Any]:
    return values if isinstance(values, list) else [values]


def expected_words(possible: list[Any]) -> str:
    """The possible values in words: ``'celsius'``, ``one of: 1, 2``, ``... (or left out)``."""
    values = [p for p in possible if p != ""]
    if not values:
        return "left out"
    text = repr(values[0]) if len(values) == 1 else "one of: " + ", ".join(map(repr, values))
    if len(text) > 200:
        text = text[:197] + "..."
    return text + (" (or left out)" if "" in possible else "")


def gold_call(name: str, possible: dict[str, list[Any]]) -> str:
    """The expected call written out with the first possible value of each parameter."""
    args = []
    for param, values in possible.items():
        given = [v for v in values if v != ""]
        if given:
            args.append(f"{param}={given[0]!r}")
    return f"{name}({', '.join(args)})"


__all__ = [
    "STRING_RULE",
    "TYPES",
    "CallCheck",
    "check_call",
    "dict_ok",
    "dicts_ok",
    "expected_words",
    "gold_call",
    "list_ok",
    "standardize",
    "type_verdict",
    "value_problem",
]
