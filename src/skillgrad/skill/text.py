"""Text helpers every room uses; first of all the one rule for outside text.

Outside text (a model's reply, an environment's observation, task data, a user's file) may hold
code points that UTF-8 cannot encode; ``valid_text`` makes it safe for a request, a cache key or
a file. Plain functions of strings and JSON-like values, with no dependency on the rest.
"""

from __future__ import annotations

import re
from typing import Any

# A Python str may hold the surrogate code points U+D800-U+DFFF on their own: a JSON escape
# such as "\udce9", or a byte read with errors="surrogateescape". UTF-8 can encode none of them.
_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def valid_text(s: str) -> str:
    """``s`` as valid UTF-8 text. The rule: every surrogate code point (U+D800-U+DFFF, which
    UTF-8 cannot encode: a lone JSON escape like ``"\\udce9"``, a byte decoded with
    ``surrogateescape``) becomes U+FFFD, one for one; every other character is kept, so valid
    text comes back unchanged (the same object) and lengths and offsets never move. The byte a
    ``surrogateescape`` stood for is not guessed at: its encoding is unknown."""
    if s.isascii():  # the common case, checked in C without a copy
        return s
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(REPLACEMENT, s)
    return s


def valid_data(value: Any) -> Any:
    """``value`` (a JSON-like value: dicts, lists, tuples, strings, numbers) with every string in
    it, dict keys included, made valid by ``valid_text``; lists stay lists and tuples tuples,
    and a value with nothing to change comes back as the same object."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, dict):
        items = [(valid_data(k), valid_data(v)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(), strict=True)):
            return value
        return dict(items)
    if isinstance(value, (list, tuple)):
        cleaned = [valid_data(v) for v in value]
        if all(c is v for c, v in zip(cleaned, value, strict=True)):
            return value
        return tuple(cleaned) if isinstance(value, tuple) else cleaned
    return value


__all__ = ["REPLACEMENT", "valid_data", "valid_text"]
