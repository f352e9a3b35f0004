"""Parting: where a failed attempt and the attempt that solved it parted, as a rule in words.

Exploration pairs each failed train episode with the attempt that solved it
(``Exploration.pairs``: the attempt the passing retry corrected, else the batch's failure). The
two often type the same commands, then part: on Pecking Order with gold off, both typed
``read instructions book`` and ``take strawberry``, then the failure typed ``take grape`` (the
score fell) where the pass read the book again. The contrast call shows the 1.5B optimizer both
attempts, and it wrote the commands themselves back ("read instructions book", "take
strawberry") or "Read the instructions book first." — not what to do after a take; a smaller
target given the skill took the same object twice, then repeated the game's refusal
(``skillgrad trace``, 0.5B check target).

This module writes that difference by code: after the commands both typed, the pass's next
command and the failure's, each as its command form (``train/command_forms.command_form``: an
object of one episode as ``<object>``), as "After `take <object>`, type `read instructions
book` (solved episodes did; failed ones typed `take <object>`)." — or, when they part at the
first command, "Start with …". A command on a word every episode shows (``take grape``) is
said as the general form it is an instance of (``take <object>``; ``Forms``): the first sweep
with the switch on wrote "failed ones typed `take grape`" into a line. Only where the two forms
differ: a difference of objects alone
(``move <object>`` / ``move <object>``) says nothing in words. One line per distinct moment,
the one most pairs show first, at most ``MAX_RULES``. The lines (source ``parting``) join the
candidate beside the worked example outside the learning rate's count, pass the line screen
like every rule (a raw object name is refused) and are gated and pruned like any line: with a
check target (``train.check_targets``), the prune keeps one only when a target needs it.
Probe (not a sweep): seed 0's best skill of the check-target sweep on splits 910–914 plus such a
line, on 12 fresh val episodes (split 999) with the 0.5B: 0.81 → 1.00 (+3 / −0).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from skillgrad.prompts import render_prompt
from skillgrad.tasks.views import view_of
from skillgrad.train.command_forms import PLACEHOLDER, command_form, form_pattern
from skillgrad.train.reflect import trajectory_id
from skillgrad.train.screens.specific import EpisodeObjects
from skillgrad.types import Edit, Trajectory

SOURCE = "parting"
"""``Edit.source`` of a line written from where a failed and a solving attempt parted."""
MAX_RULES = 2
MAX_QUOTED_WORDS = 5
"""A failed command longer than this is not quoted (a reply that echoed the game's refusal is
no command; the failed-reply screen refuses a rule repeating 6 words of one)."""


def typed(t: Trajectory) -> tuple[str, ...] | None:
    """Every command ``t`` typed, in order (None for a kind without commands)."""
    vocabulary = view_of(t).vocabulary(t)
    return vocabulary.typed if vocabulary is not None else None


@dataclass(frozen=True)
class Forms:
    """How a command is said in a parting line: its command form (``command_form``: an object
    of one episode as ``<object>``), or the general form it is an instance of among the shown
    episodes' commands (``take grape``, a fruit every episode shows, is one of ``take
    <object>``), else the command itself."""

    objects: EpisodeObjects
    general: tuple[tuple[str, re.Pattern[str]], ...] = ()

    @classmethod
    def build(cls, shown: Sequence[Trajectory]) -> Forms:
        objects = EpisodeObjects.build([view_of(t).vocabulary(t) for t in shown])
        found = {f for t in shown for c in typed(t) or () if (f := command_form(c, objects))}
        general = sorted(f for f in found if PLACEHOLDER in f)
        return cls(objects, tuple((f, form_pattern(f)) for f in general))

    def __call__(self, command: str) -> str:
        form = command_form(command, self.objects) or command
        if PLACEHOLDER in form:
            return form
        return next((g for g, pattern in self.general if pattern.fullmatch(command)), form)


def parting(
    failed: Trajectory, solved: Trajectory, form: Forms
) -> tuple[str | None, str, str] | None:
    """Where ``failed`` and ``solved`` parted: the last command both typed (None when they
    parted at the first), then the solving and the failed attempt's next commands, as forms.
    None when either has no commands, one's commands start the other's, or the two next
    commands have the same form."""
    a, b = typed(failed), typed(solved)
    if not a or not b:
        return None
    n = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
    if n is None:
        return None
    did, not_did = form(b[n]), form(a[n])
    if did.casefold() == not_did.casefold():
        return None
    return (form(a[n - 1]) if n else None), did, not_did


def parting_edits(
    pairs: Sequence[tuple[Trajectory, Trajectory]], shown: Sequence[Trajectory], step: int
) -> list[Edit]:
    """The step's parting lines (``pairs``: each failed train episode and the attempt that
    solved it; ``shown``: every episode the step played, whose objects become ``<object>``)."""
    form = Forms.build(shown)
    found: Counter[tuple[str | None, str]] = Counter()
    failed_forms: dict[tuple[str | None, str], Counter[str]] = {}
    ids: dict[tuple[str | None, str], list[str]] = {}
    for failed, solved in pairs:
        if (p := parting(failed, solved, form)) is not None:
            after, did, not_did = p
            found[after, did] += 1
            failed_forms.setdefault((after, did), Counter())[not_did] += 1
            ids.setdefault((after, did), []).append(trajectory_id(step, failed.item_id))
    out: list[Edit] = []
    moments: set[str | None] = set()
    for (after, did), n in found.most_common():
        if after in moments:  # one line per moment: the one most pairs show
            continue
        moments.add(after)
        not_did = failed_forms[after, did].most_common(1)[0][0]
        quoted = len(not_did.split()) <= MAX_QUOTED_WORDS
        said = render_prompt("parting_failed", command=not_did).rstrip("\n") if quoted else ""
        name = "parting_after" if after else "parting_start"
        line = render_prompt(name, after=after or "", did=did, not_did=said).strip()
        why = f"{n} failed train episode(s) of step {step} parted from the attempt that solved it"
        trail = tuple(ids[after, did])
        out.append(Edit(op="add", section="", content=f"- {line}", rationale=why,
                        trajectory_ids=trail, source=SOURCE))  # fmt: skip
        if len(out) == MAX_RULES:
            break
    return out


__all__ = ["MAX_RULES", "SOURCE", "Forms", "parting", "parting_edits", "typed"]
