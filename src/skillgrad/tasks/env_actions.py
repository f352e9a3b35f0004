"""The actions of an environment episode: the action a target's reply names (``parse_action``),
whether the environment lists it (``check_action``), and a sequence that solved without its
detours (``loop_erased``, ``shortcuts``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from skillgrad.errors import ConfigError

_LEAD = re.compile(r"^(?:>|[-*•]|\d+[.)]|(?:next\s+)?(?:action|command)\s*:)\s*", re.IGNORECASE)
_QUOTES = "`*\"' "


def check_action(action: str, listed: Any) -> tuple[bool | None, str | None]:
    """Whether ``action`` is one of the environment's listed commands exactly as listed (spaces
    normalised): ``(None, None)`` when there is no list; ``(False, form)`` when it differs from
    a listed ``form`` only in letter case. Games such as TextWorldExpress reject "Take banana"
    when they list "take banana", so a case variant is not counted as accepted, and the form the
    environment lists is kept for the feedback and the optimizer's view."""
    if not isinstance(listed, list) or not listed:
        return None, None
    said = " ".join(action.split())
    forms = {" ".join(str(v).split()) for v in listed}
    if said in forms:
        return True, None
    by_case = {f.lower(): f for f in sorted(forms)}
    return False, by_case.get(said.lower())


MAX_PATTERN_CHARS = 200


def compile_action_pattern(pattern: Any) -> re.Pattern[str] | None:
    """``env.options.action_pattern`` checked at config time: a regular expression of at most
    ``MAX_PATTERN_CHARS`` characters that compiles, or None (the first-line rule)."""
    if pattern is None:
        return None
    where = "env.options.action_pattern"
    if not isinstance(pattern, str) or not pattern:
        raise ConfigError(f"{where} must be a non-empty regular expression; got {pattern!r}")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ConfigError(f"{where} has {len(pattern)} characters; at most {MAX_PATTERN_CHARS}")
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ConfigError(
            f"{where} {pattern!r} is not a regular expression: {exc}. In YAML, single-quote "
            "it (a backslash then stays a backslash)"
        ) from None


def parse_action(reply: str, limit: int = 120, pattern: re.Pattern[str] | None = None) -> str:
    """The action in a reply: the first match of ``pattern`` anywhere in it when one is given
    and matches; else its first line with text, list marks, quotes and an ``Action:`` label
    stripped, a final period dropped. At most ``limit`` characters, spaces normalised."""
    found = pattern.search(reply) if pattern is not None else None
    if found is not None and found.group(0).strip():
        return " ".join(found.group(0).split())[:limit]
    for line in reply.splitlines():
        text = line.strip()
        if text.startswith("```"):
            continue
        for _ in range(3):
            text = _LEAD.sub("", text.strip(_QUOTES)).strip(_QUOTES)
        text = text.rstrip(".").strip()
        if text:
            return " ".join(text.split())[:limit]
    return ""


def loop_erased(
    actions: Sequence[str], after: Sequence[str], start: str, *, repeats: bool = False
) -> list[str]:
    """``actions`` without their detours: when the observation after a command is one the
    sequence showed before the last (``start``, or the answer to an earlier command still
    kept), the commands since then are dropped (a loop-erased walk, with observations standing
    for states). A command answered with the observation just shown (``look around`` first, as
    the games' own solutions start) is a look, not a detour: it stays; with ``repeats`` a look
    that repeats the command just kept (a second ``look around`` answered the same) is dropped.
    An observation can repeat while the hidden state moved on, so the caller replays the result
    and keeps it only when it still solves the episode (``shortcuts``)."""
    kept: list[str] = []
    at = {start: 0}  # observation -> how many kept commands led to it
    for action, obs in zip(actions, after, strict=True):
        back = at.get(obs)
        if back is not None and back == len(kept):  # a look
            if not (repeats and kept and kept[-1] == action):
                kept.append(action)
                at[obs] = len(kept)
            continue
        if back is not None:
            del kept[back:]
            at = {o: n for o, n in at.items() if n <= back}
            continue
        kept.append(action)
        at[obs] = len(kept)
    return kept


def shortcuts(actions: Sequence[str], after: Sequence[str], start: str) -> list[list[str]]:
    """The shorter sequences worth replaying for ``actions`` (answered by ``after`` from
    ``start``), the shortest first: without its detours and repeated looks, then without its
    detours alone (a repeated command can move hidden state on: three presses of one button).
    Empty when nothing is shorter."""
    out: list[list[str]] = []
    for repeats in (True, False):
        short = loop_erased(actions, after, start, repeats=repeats)
        if len(short) < len(actions) and short not in out:
            out.append(short)
    return out


__all__ = [
    "MAX_PATTERN_CHARS",
    "check_action",
    "compile_action_pattern",
    "loop_erased",
    "parse_action",
    "shortcuts",
]
