"""Framing and a safe value encoding between the judge and the solution host.

Messages are length-prefixed JSON (``MAX_MESSAGE`` bytes at most). Values cross as tagged JSON
that decodes ONLY to exact builtin types (None, bool, int, float, complex, str, bytes, list,
tuple, set, frozenset, dict): a hostile host cannot make the judge build an object with its own
``__eq__`` or run code while decoding. A module travels as its name (``{"m": name}``: the judge
imports its own copy), anything else as a numbered handle (``{"h": n}``).
"""

from __future__ import annotations

import base64
import json
import os
import struct
from typing import Any

MAX_MESSAGE = 16 * 1024 * 1024
MAX_DEPTH = 64
TEXT_CHARS = 4_000  # an error message as the host sends it and the judge records it
_HEADER = struct.Struct(">I")


def cut(text: str, limit: int) -> str:
    """``text`` when it has at most ``limit`` characters, else its first and last ``limit // 2``
    characters around a marker saying how many were cut (``skillgrad.sandbox.bounds`` too)."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return text[:half] + f"\n...[{len(text) - 2 * half} characters cut]...\n" + text[-half:]


class WireError(Exception):
    """A malformed, oversized or truncated message, or a value that cannot cross."""


def send(fd: int, message: dict[str, Any]) -> None:
    data = json.dumps(message, separators=(",", ":")).encode()
    if len(data) > MAX_MESSAGE:
        raise WireError(f"message of {len(data)} bytes exceeds {MAX_MESSAGE}")
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def _read_exact(fd: int, n: int) -> bytes:
    chunks: list[bytes] = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise EOFError("the other side closed the channel")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def receive(fd: int) -> dict[str, Any]:
    (size,) = _HEADER.unpack(_read_exact(fd, _HEADER.size))
    if size > MAX_MESSAGE:
        raise WireError(f"message of {size} bytes exceeds {MAX_MESSAGE}")
    try:
        message = json.loads(_read_exact(fd, size))
    except (ValueError, RecursionError) as exc:
        raise WireError(f"malformed message: {exc}") from None
    if not isinstance(message, dict):
        raise WireError("a message must be a JSON object")
    return message


# A builtin type and how to take an exact builtin copy of an instance of a subclass of it with
# the type's own C code (the subclass's overrides, e.g. a str Enum's __str__, are not asked).
_BUILTIN_COPIES: tuple[tuple[type, Any], ...] = (
    (int, int.__int__),
    (float, float.__float__),
    (complex, lambda v: complex(complex.real.__get__(v), complex.imag.__get__(v))),
    (str, str.__str__),
    (bytes, lambda v: bytes.__getitem__(v, slice(None))),
    (tuple, lambda v: tuple.__getitem__(v, slice(None))),
    (list, list.copy),
    (dict, dict.copy),
    (set, set.copy),
    (frozenset, frozenset.copy),
)
_NOT_BUILTIN = object()


def builtin_value(value: Any) -> Any:
    """The builtin value an instance of a builtin type's subclass holds (a namedtuple's tuple,
    an IntEnum's int, an OrderedDict's dict), or ``_NOT_BUILTIN``: such values cross as their
    builtin value, so the tests compare them by value, as Python does unless the subclass
    overrides ``__eq__`` (an override the judge never asks)."""
    for kind, copy in _BUILTIN_COPIES:
        if isinstance(value, kind):
            result = copy(value)
            if type(result) is kind:
                return result
    return _NOT_BUILTIN


def encode(value: Any, handle: Any = None, depth: int = 0) -> Any:
    """``value`` as tagged JSON; values of other types go through ``handle(value)`` (a tag)."""
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    kind = type(value)
    if value is None or kind in (bool, str):
        return value
    if kind is int:  # hex: not subject to the int/str digit limit
        return {"i": format(value, "x")}
    if kind is float:
        return {"f": value.hex()}
    if kind is complex:
        return {"c": [value.real.hex(), value.imag.hex()]}
    if kind is bytes:
        return {"b": base64.b64encode(value).decode()}
    tags: dict[type, str] = {list: "L", tuple: "T", set: "S", frozenset: "F"}
    if kind in tags:
        return {tags[kind]: [encode(v, handle, depth + 1) for v in value]}
    if kind is dict:
        pairs = [
            [encode(k, handle, depth + 1), encode(v, handle, depth + 1)] for k, v in value.items()
        ]
        return {"D": pairs}
    plain = builtin_value(value)
    if plain is not _NOT_BUILTIN:
        return encode(plain, handle, depth + 1)
    if handle is None:
        raise WireError(f"a {kind.__name__} cannot be sent to the solution process")
    return handle(value)


def decode(data: Any, handle: Any = None, depth: int = 0) -> Any:
    """The builtin value ``data`` encodes; ``{"h": n}`` goes through ``handle(n)``."""
    if depth > MAX_DEPTH:
        raise WireError("value nested too deeply")
    if data is None or type(data) in (bool, str):
        return data
    if type(data) is not dict or len(data) != 1:
        raise WireError(f"not an encoded value: {str(data)[:80]}")
    ((tag, body),) = data.items()
    try:
        if tag == "i" and type(body) is str and len(body) <= MAX_MESSAGE:
            return int(body, 16)
        if tag == "f":
            return float.fromhex(body)
        if tag == "c":
            return complex(float.fromhex(body[0]), float.fromhex(body[1]))
        if tag == "b":
            return base64.b64decode(body, validate=True)
        items = (
            [decode(v, handle, depth + 1) for v in body] if tag in ("L", "T", "S", "F") else None
        )
        if tag == "L":
            return items
        if tag == "T":
            return tuple(items or ())
        if tag == "S":
            return set(items or ())
        if tag == "F":
            return frozenset(items or ())
        if tag == "D":
            return {decode(k, handle, depth + 1): decode(v, handle, depth + 1) for k, v in body}
        if tag in ("h", "m") and handle is not None and type(body) in (int, str):
            return handle({tag: body})
    except WireError:
        raise
    except (TypeError, ValueError, IndexError) as exc:
        raise WireError(f"malformed value {tag!r}: {exc}") from None
    raise WireError(f"unknown value tag {tag!r}")
