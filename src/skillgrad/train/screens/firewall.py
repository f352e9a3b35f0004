"""The verifier-leak firewall: a scorer's ``evidence`` (gold answers, a checker's pattern, an
expected call list: ``types.Score``) never reaches the optimizer, and a candidate whose new
lines copy it is refused before any target call, whatever ``train.reject_leaks`` says — a
skill that quotes its checker games the verifier instead of doing the task.

What counts as a copy of evidence (texts of the run's train and val items, from the result
cache, so a resumed run checks what the uninterrupted one did):

1. **Checker fragments.** A whitespace-separated piece of the evidence of at least
   ``MIN_FRAGMENT`` characters that holds a character prose does not (``[](){}^$\\|*+?=<>/_``:
   a regex, a call signature, a path), found verbatim (case-folded, NFKC) in a new line.
2. **Long spans.** The rules of ``train/screens/leaks.py`` (``train.leak_ngram`` words in a row, the
   task's boilerplate excepted) with the evidence texts as the items.

The initial skill's text and the text of ``example`` edits (built by code from train items,
never written by the optimizer) are exempt.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from skillgrad.runs.records import Leak
from skillgrad.skill.text import normalise
from skillgrad.train.screens.leaks import LeakIndex
from skillgrad.types import Item

MIN_FRAGMENT = 6
_CODE_CHAR = re.compile(r"[\[\](){}^$\\|*+?=<>/_]")
_EDGE = "\"'`.,;:!?/()"  # quotes, sentence marks, regex slashes, a parenthesised word


def _fold(text: str) -> str:
    """The leak check's own normal form (``skill.text.normalise``: whatever it strips, so do we)."""
    return normalise(text)


def fragments(evidence: str) -> set[str]:
    """Rule 1's fragments of one evidence text (folded)."""
    out = set()
    for token in evidence.split():
        piece = token.strip(_EDGE)
        if len(piece) >= MIN_FRAGMENT and _CODE_CHAR.search(piece):
            out.add(_fold(piece))
    return out


def base_id(result_id: str) -> str:
    """The item id of a result id (``"<item>#s<k>"`` for a repeated sample)."""
    return result_id.split("#s", 1)[0]


def evidence_leaks(
    skill: str,
    evidence: Iterable[tuple[str, str]],
    splits: dict[str, str],
    ngram: int,
    exempt: str = "",
) -> tuple[Leak, ...]:
    """Lines of ``skill`` copying the evidence of an item of ``splits`` (item id -> split);
    ``evidence``: (result id, text) pairs; ``exempt``: text whose copies are the user's."""
    texts: dict[str, list[str]] = {}
    for result_id, text in evidence:
        item = base_id(result_id)
        if item in splits and text not in texts.setdefault(item, []):
            texts[item].append(text)
    if not texts:
        return ()
    allowed = _fold(exempt)
    found: list[Leak] = []
    lines = skill.splitlines()
    for item, item_texts in texts.items():
        for piece in set().union(*(fragments(t) for t in item_texts)):
            if piece in allowed:
                continue
            for number, line in enumerate(lines, start=1):
                if piece in _fold(line):
                    found.append(Leak("", number, piece, item, splits[item], "evidence"))
    items = [Item(id=i, input=" \n".join(ts)) for i, ts in texts.items()]
    index = LeakIndex.build({"evidence": items}, ngram)
    for x in index.find(skill, exempt=exempt):
        found.append(Leak(x.file, x.line, x.span, x.item_id, splits[x.item_id], "evidence"))
    return tuple(dict.fromkeys(found))


def exempt_text(initial_skill: str, example_texts: Sequence[str] = ()) -> str:
    """What evidence copies may appear in: the initial skill and code-built example edits."""
    return "\n".join([initial_skill, *example_texts])


__all__ = ["MIN_FRAGMENT", "base_id", "evidence_leaks", "exempt_text", "fragments"]
