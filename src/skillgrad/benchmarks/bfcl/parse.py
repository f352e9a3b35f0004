"""Reading a BFCL reply: Python-style calls ``[f(a=1), g.h(b="x")]`` parsed with ``ast``, never run.

Follows the decoding of BFCL's prompting handlers (``default_decode_ast_prompting``): the reply
is stripped of backticks, newlines and spaces at both ends, wrapped in ``[ ]`` when it is not,
and must then be a list of calls with keyword arguments. Argument values are literals; a bare
name is read as its text (BFCL's "variable"), a call without keywords as its source text, a
call with keywords as a nested call. BFCL evaluates arithmetic with ``eval``; here only numbers
are combined, by a small evaluator with bounds, and anything else is refused.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MAX_REPLY_CHARS = 20_000  # far above any answer BFCL expects; guards the parser's recursion
# Deepest syntax tree read: ast.parse builds ``x.x.x...``, ``g()()...``, ``x[0][0]...`` and a
# 1,200-term sum as trees that deep, and every reader after it (this module, ast.unparse)
# recurses once per level. BFCL's own answers stay below 15.
MAX_TREE_DEPTH = 50
MAX_POWER = 64
# Literals and arithmetic stay cheap (no 10**10**10) and printable: Python refuses to turn an
# int of more than 4,300 decimal digits (~14,000 bits) into text.
MAX_INT_BITS = 1 << 12
_FENCE = re.compile(r"```[\w+-]*[ \t]*\n?(.*?)```", re.DOTALL)
_ARITHMETIC: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}


class CallSyntaxError(ValueError):
    """The reply is not a list of calls in BFCL's Python format; the message says why."""


@dataclass(frozen=True)
class Call:
    """One parsed call: dotted function name, keyword arguments, and how many positional
    arguments were given (BFCL reads only keywords; positional ones are dropped)."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    positional: int = 0

    def render(self) -> str:
        return f"{self.name}({', '.join(f'{k}={v!r}' for k, v in self.args.items())})"


def parse_calls(text: str) -> list[Call]:
    """The calls of a reply in BFCL's format; ``CallSyntaxError`` when it is not one."""
    if len(text) > MAX_REPLY_CHARS:
        raise CallSyntaxError(f"the reply is {len(text)} characters long; no list of calls is")
    body = text.strip("`\n ")
    body = body if body.startswith("[") else "[" + body
    body = body if body.endswith("]") else body + "]"
    try:
        tree = ast.parse(body.strip().strip("'"), mode="eval").body
    except SyntaxError as exc:
        raise CallSyntaxError(f"not valid Python ({exc.msg}, column {exc.offset})") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise CallSyntaxError(f"not parseable ({type(exc).__name__})") from None
    deepest = _depth(tree)
    if deepest > MAX_TREE_DEPTH:
        raise CallSyntaxError(
            f"nested more than {MAX_TREE_DEPTH} levels deep (chained attributes, calls, "
            "subscripts or operators); write each call flat with literal values"
        )
    nodes = [tree] if isinstance(tree, ast.Call) else getattr(tree, "elts", None)
    if nodes is None:
        raise CallSyntaxError(f"a {type(tree).__name__} expression, not a list of calls")
    calls = []
    for node in nodes:
        if not isinstance(node, ast.Call):
            shown = _source(node)
            raise CallSyntaxError(f"the list holds {shown!r}, which is not a function call")
        calls.append(_call(node))
    return calls


def fenced_calls(text: str) -> list[Call] | None:
    """The calls of the first fenced code block that holds some (a lenient reading BFCL does
    not do: used for partial credit and to catch calls hidden in a fence), else None."""
    for block in _FENCE.findall(text):
        try:
            calls = parse_calls(block)
        except CallSyntaxError:
            continue
        if calls:
            return calls
    return None


def _depth(tree: ast.AST) -> int:
    """The depth of ``tree`` (walked with an explicit stack), or ``MAX_TREE_DEPTH + 1`` as
    soon as it is deeper."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_TREE_DEPTH:
            return depth
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return deepest


def _source(node: ast.AST) -> str:
    return ast.unparse(node)[:60]


def _dotted(node: ast.expr) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        raise CallSyntaxError(f"{_source(node)!r} is not a function name")
    parts.append(node.id)
    return ".".join(reversed(parts))


def _call(node: ast.Call) -> Call:
    args: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise CallSyntaxError(f"`**{_source(kw.value)}` in a call: give each argument by name")
        args[kw.arg] = _value(kw.value)
    return Call(_dotted(node.func), args, len(node.args))


def _value(node: ast.expr) -> Any:
    """One argument value, the way BFCL's ``resolve_ast_by_type`` reads it, without eval."""
    if isinstance(node, ast.Constant):
        if isinstance(node.value, int) and _bits(node.value) > MAX_INT_BITS:
            raise CallSyntaxError(f"an integer of {_bits(node.value)} bits is too large a number")
        return "..." if node.value is Ellipsis else node.value
    if isinstance(node, ast.List):
        return [_value(v) for v in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_value(v) for v in node.elts)
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise CallSyntaxError("`**` inside a dict value: write the dict out")
        pairs = [(_value(k), _value(v)) for k, v in zip(node.keys, node.values, strict=True)]  # type: ignore[arg-type]
        try:
            return dict(pairs)
        except TypeError:  # e.g. {[1]: 2}: a list (or a nested call's dict) as a key
            raise CallSyntaxError(
                f"dict {_source(node)!r} has a key that is not a string, number or tuple"
            ) from None
    if isinstance(node, ast.Name):
        return node.id  # BFCL reads a variable as its name
    if isinstance(node, ast.Call):
        return _nested(node)
    if isinstance(node, ast.Subscript):  # BFCL keeps a subscript as its text
        return f"{ast.unparse(node.value)}[{ast.unparse(node.slice)}]"
    if isinstance(node, ast.UnaryOp | ast.BinOp):
        return _arithmetic(node)
    raise CallSyntaxError(f"unsupported value {_source(node)!r}: use a literal")


def _nested(node: ast.Call) -> Any:
    if not node.keywords:
        return ast.unparse(node)
    inner = _call(node)
    return {inner.name: inner.args}


def _arithmetic(node: ast.expr) -> int | float:
    value = node.value if isinstance(node, ast.Constant) else None
    if isinstance(value, int | float) and not isinstance(value, bool):  # True + 1 is no number
        if _bits(value) > MAX_INT_BITS:
            raise CallSyntaxError(f"an integer of {_bits(value)} bits is too large a number")
        return value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = _arithmetic(node.operand)
        return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        left, right = _arithmetic(node.left), _arithmetic(node.right)
        if isinstance(node.op, ast.Pow) and (
            abs(right) > MAX_POWER or _bits(left) * abs(right) > MAX_INT_BITS
        ):
            raise CallSyntaxError(f"{_source(node)!r} is too large a number")
        try:
            result = _ARITHMETIC[type(node.op)](left, right)
        except (ArithmeticError, ValueError) as exc:
            raise CallSyntaxError(f"{_source(node)!r}: {exc}") from None
        if not isinstance(result, int | float):  # e.g. a negative number to a fractional power
            raise CallSyntaxError(f"{_source(node)!r} is not a real number")
        if _bits(result) > MAX_INT_BITS:
            raise CallSyntaxError(f"{_source(node)!r} is too large a number")
        return result
    raise CallSyntaxError(f"unsupported value {_source(node)!r}: use a literal")


def _bits(x: int | float) -> int:
    return abs(x).bit_length() if isinstance(x, int) else 0


__all__ = ["Call", "CallSyntaxError", "fenced_calls", "parse_calls"]
