"""Replies built from BFCL's own possible answers, each labelled with BFCL's verdict.

``variants(entry)`` renders the gold answer of one BFCL entry as calls in every way BFCL must
accept (each possible value of each parameter, optional parameters left out, calls reordered,
an int for a float, strings in another case) and in documented ways it must refuse (another
function, a required parameter dropped, an unknown parameter, a value not among the possible
ones, a wrong type, a call too many or too few, a code fence around the list).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from skillgrad.benchmarks.bfcl.check import standardize
from skillgrad.benchmarks.bfcl.data import Entry

SKIP = object()
Variant = tuple[str, str, bool]  # label, reply, accepted by BFCL


def first(values: list[Any]) -> Any:
    given = [v for v in values if v != ""]
    return given[0] if given else SKIP


def realize(value: Any, spec: dict[str, Any]) -> Any:
    """A possible answer as a concrete value: a possible dict maps keys to possible values."""
    items = spec.get("items") or {}
    if spec.get("type") == "dict" and isinstance(value, dict):
        return {k: first(vs) for k, vs in value.items() if first(vs) is not SKIP}
    if spec.get("type") == "array" and items.get("type") == "dict" and isinstance(value, list):
        return [realize(v, {"type": "dict"}) for v in value]
    return value


def render(calls: list[tuple[str, dict[str, Any]]]) -> str:
    parts = [f"{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})" for name, args in calls]
    return "[" + ", ".join(parts) + "]"


def _calls(entry: Entry) -> list[tuple[str, dict[str, list[Any]], dict[str, Any], list[str]]]:
    docs = {f["name"]: f for f in entry.functions}
    out = []
    for call in entry.gold or []:
        ((name, params),) = call.items()
        parameters = docs[name]["parameters"]
        out.append((name, params, parameters["properties"], parameters.get("required", [])))
    return out


def canonical(entry: Entry) -> list[tuple[str, dict[str, Any]]]:
    calls = []
    for name, params, props, _ in _calls(entry):
        args = {}
        for param, values in params.items():
            value = first(values)
            if param in props and value is not SKIP:
                args[param] = realize(value, props[param])
        calls.append((name, args))
    return calls


def variants(entry: Entry) -> Iterator[Variant]:
    base = canonical(entry)
    yield "canonical", render(base), True
    yield from _accepted(entry, base)
    yield from _refused(entry, base)


def _replace(base: list[tuple[str, dict[str, Any]]], i: int, args: dict[str, Any]) -> str:
    return render([*base[:i], (base[i][0], args), *base[i + 1 :]])


def _accepted(entry: Entry, base: list[tuple[str, dict[str, Any]]]) -> Iterator[Variant]:
    for i, (_name, params, props, required) in enumerate(_calls(entry)):
        for param, values in params.items():
            if param not in props:
                continue
            for value in values:
                if value != "" and value is not first(values):
                    args = {**base[i][1], param: realize(value, props[param])}
                    yield f"value {param}={value!r}", _replace(base, i, args), True
            value = base[i][1].get(param)
            kind = props[param]["type"]
            if kind == "float" and type(value) is float and value.is_integer():
                args = {**base[i][1], param: int(value)}
                yield f"int for float {param}", _replace(base, i, args), True
            if kind == "string" and type(value) is str and value.upper().lower() == value.lower():
                args = {**base[i][1], param: value.upper()}
                yield f"upper case {param}", _replace(base, i, args), True
        optional = [p for p, vs in params.items() if "" in vs and p not in required]
        if optional:
            args = {k: v for k, v in base[i][1].items() if k not in optional}
            yield "optional left out", _replace(base, i, args), True
    if len(base) > 1:
        yield "reversed", render(base[::-1]), True


def _refused(entry: Entry, base: list[tuple[str, dict[str, Any]]]) -> Iterator[Variant]:
    yield "other function", render([(base[0][0] + "_x", base[0][1]), *base[1:]]), False
    yield "call too many", render([*base, base[0]]), False
    yield "no call", "[]", False
    yield "fenced", f"```python\n{render(base)}\n```", False
    if len(base) > 1:
        yield "call too few", render(base[:-1]), False
    for i, (_name, params, props, required) in enumerate(_calls(entry)):
        yield "unknown parameter", _replace(base, i, {**base[i][1], "zz_unknown": 1}), False
        for param in required:
            if param in base[i][1]:
                args = {k: v for k, v in base[i][1].items() if k != param}
                yield f"required {param} dropped", _replace(base, i, args), False
        for param, value in base[i][1].items():
            wrong = _wrong_value(value, params[param])
            if wrong is not SKIP:
                args = {**base[i][1], param: wrong}
                yield f"wrong value {param}={wrong!r}", _replace(base, i, args), False
            wrong = _wrong_type(value, props[param]["type"], params[param])
            if wrong is not SKIP:
                args = {**base[i][1], param: wrong}
                yield f"wrong type {param}={wrong!r}", _replace(base, i, args), False


def _std(v: Any) -> Any:
    return standardize(v) if isinstance(v, str) else v


def _wrong_value(value: Any, possible: list[Any]) -> Any:
    if type(value) is str:
        wrong: Any = value + " qq"
        return wrong if _std(wrong) not in [_std(p) for p in possible] else SKIP
    if type(value) is bool:
        return SKIP if (not value) in possible else (not value)
    if type(value) in (int, float):
        wrong = max(v for v in possible if type(v) in (int, float)) + 7
        return wrong if wrong not in possible else SKIP
    if type(value) is list:
        return [*value, "qq extra"]
    if type(value) is dict:
        return {**value, "qq_extra_key": 1}
    return SKIP


def _wrong_type(value: Any, kind: str, possible: list[Any]) -> Any:
    known = {type(p) for p in possible if p != ""}
    if kind == "integer" and type(value) is int and known == {int}:
        return str(value)
    if kind == "boolean" and type(value) is bool and known == {bool}:
        return int(value)
    if kind == "string" and type(value) is str and known == {str}:
        return [value]
    return SKIP


__all__ = ["SKIP", "Variant", "canonical", "first", "realize", "render", "variants"]
