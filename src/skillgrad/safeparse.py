"""Parsing of outside text, bounded: JSON (model replies, tool-call arguments, agent event
streams, task data) and YAML (run configs, sweep values, the model catalog, SKILL.md frontmatter).

JSON. Python's decoder recurses once per ``[``/``{``: ~1,000 of them (a few hundred tokens for a
model that writes ``[[`` as one) raise ``RecursionError``, which no ``except ValueError`` catches,
and a deep value that did decode still breaks ``json.dumps``, pydantic and every recursive reader
after it. So every parse of outside text goes through ``loads`` / ``raw_decode`` here: a cheap
scan refuses a value nested deeper than ``MAX_DEPTH`` or a text longer than ``MAX_CHARS``, with
a ``JSONBoundError`` — a ``json.JSONDecodeError`` (so a ``ValueError``) saying where — and the
decoder's own ``RecursionError`` / ``MemoryError`` and its ``ValueError`` on a number of more
than 4,300 digits become the same error: callers catch ``json.JSONDecodeError`` only.

YAML. ``load_yaml`` is the one YAML loader: a ``SafeLoader`` (no Python objects) that refuses
what PyYAML would accept silently or choke on: a key given twice (PyYAML keeps the last: a second
``sha256:`` replaced the first), nesting so deep the composer recurses out of the stack, and
aliases enough to expand into a huge document. Every refusal is the caller's error class, naming
the source and the line.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from skillgrad.errors import ConfigError, SkillgradError

MAX_DEPTH = 100
"""Deepest nesting of arrays and objects accepted (real replies and data stay below ~10)."""
MAX_CHARS = 2_000_000
"""Longest text decoded (a reply far beyond any completion cap; ``None`` lifts it per call)."""

# A JSON string (closed or running to the end of the text), or one bracket.
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]', re.DOTALL)
_DECODER = json.JSONDecoder()


class JSONBoundError(json.JSONDecodeError):
    """The text is nested deeper or is longer than its bound: refused before decoding."""


def nesting_problem(text: str, pos: int = 0, max_depth: int = MAX_DEPTH) -> tuple[str, int] | None:
    """Why the JSON value starting at ``pos`` is too deep, and where, or None. Scans brackets
    outside strings until the value closes; linear in the value's length, never recursive."""
    depth = 0
    for m in _TOKENS.finditer(text, pos):
        token = m.group()
        if token[0] == '"':
            if depth == 0:
                return None  # a string value: nothing nests
            continue
        if token in "[{":
            depth += 1
            if depth > max_depth:
                return f"nested more than {max_depth} levels deep", m.start()
        else:
            depth -= 1
            if depth <= 0:
                return None  # the value closed (or the text is malformed: the decoder says so)
    return None


def too_deep(value: Any, max_depth: int = MAX_DEPTH) -> str | None:
    """Why an already-decoded value (a backend's tool-call arguments) nests too deep, or None;
    walked with an explicit stack, never recursively."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list | tuple):
            if depth + 1 > max_depth:
                return f"nested more than {max_depth} levels deep"
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, depth + 1) for child in children)
    return None


def _check(text: str, pos: int, max_depth: int, max_chars: int | None) -> None:
    if max_chars is not None and len(text) - pos > max_chars:
        raise JSONBoundError(
            f"{len(text) - pos} characters of JSON text; at most {max_chars} are read", text, pos
        )
    problem = nesting_problem(text, pos, max_depth)
    if problem is not None:
        raise JSONBoundError(problem[0], text, problem[1])


def raw_decode(
    text: str, pos: int = 0, *, max_depth: int = MAX_DEPTH, max_chars: int | None = MAX_CHARS
) -> tuple[Any, int]:
    """``json.JSONDecoder().raw_decode(text, pos)`` within the bounds: (value, end index)."""
    _check(text, pos, max_depth, max_chars)
    try:
        return _DECODER.raw_decode(text, pos)
    except json.JSONDecodeError:
        raise
    except (ValueError, RecursionError, MemoryError) as exc:
        raise _unreadable(exc, text, pos) from None


def loads(text: str, *, max_depth: int = MAX_DEPTH, max_chars: int | None = MAX_CHARS) -> Any:
    """``json.loads(text)`` within the bounds; ``JSONDecodeError`` (a ``ValueError``) otherwise."""
    start = len(text) - len(text.lstrip())
    _check(text, start, max_depth, max_chars)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except (ValueError, RecursionError, MemoryError) as exc:
        raise _unreadable(exc, text, start) from None


def _unreadable(exc: Exception, text: str, pos: int) -> JSONBoundError:
    """The decoder's own failures past the scan, as the same error: a number of more than
    4,300 digits (ValueError from int()), or the stack or memory running out anyway."""
    if isinstance(exc, ValueError):
        return JSONBoundError(f"a number too long to read ({str(exc)[:80]})", text, pos)
    return JSONBoundError(f"too deep or too large to decode ({type(exc).__name__})", text, pos)


MAX_ALIASES = 100  # a hand-written file needs a few; thousands expand exponentially downstream


class _Refused(Exception):
    """Raised inside the loader; turned into the caller's error class with the source."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """A SafeLoader that refuses a mapping with the same key twice and counts aliases."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.aliases = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                line = self.peek_event().start_mark.line + 1
                raise _Refused(f"more than {MAX_ALIASES} aliases (line {line}); write it out")
        return super().compose_node(parent, index)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, list | dict):
                continue  # unhashable: the base class reports it
            if key in seen:
                first = seen[key].start_mark.line + 1
                raise _Refused(
                    f"key {key!r} appears twice (line {first} and line "
                    f"{key_node.start_mark.line + 1}); keep one of them"
                )
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str, source: str, error: type[SkillgradError] = ConfigError) -> Any:
    """Parse YAML ``text``; anything refused or malformed raises ``error`` naming ``source``."""
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass: safe
    except _Refused as exc:
        raise error(f"{source}: {exc}") from None
    except RecursionError:
        raise error(
            f"{source}: nested too deeply to read (lists or mappings inside each other)"
        ) from None
    except yaml.YAMLError as exc:
        where = str(exc).replace('"<unicode string>"', source)
        raise error(f"{source}: invalid YAML: {where}") from None
    deep = too_deep(data)
    if deep:  # readable, but every recursive reader after this would not be
        raise error(f"{source}: the YAML is {deep}")
    return data


__all__ = [
    "MAX_ALIASES",
    "MAX_CHARS",
    "MAX_DEPTH",
    "JSONBoundError",
    "load_yaml",
    "loads",
    "nesting_problem",
    "raw_decode",
    "too_deep",
]
