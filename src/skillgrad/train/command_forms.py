"""Command forms: the commands the target's own solved episodes typed, as one rule in words.

A worked example shows one episode, its commands with that episode's objects; a smaller target
copies the objects. A rule the optimizer writes from a failed and a passing attempt names no
command ("Read the instructions book first."). Measured on Pecking Order with gold off (split
300, docs/results.md): the 0.5B, given the two best such rules, typed "Move to the next room"
twelve times and solved 0 of 6 test episodes; with one more line listing the command forms of
the solved episodes, each object that differs between episodes written as ``<object>``, it
solved 5 of 6.

This module writes that line by code from the step's solved TRAIN episodes (the batch's passes
and exploration's, ``train/explore.py``): the commands the environment accepted, in order of
first use, an object word (``EpisodeObjects``: one some episodes show and others do not) as the
placeholder. The edit (source ``commands``) joins the candidate beside the worked example,
outside the learning rate's count, and is gated and leak-checked with it (never pruned, like an
example's lines: ``train/prune.added_lines``); a skill that
already holds the line gets it replaced by the union of its forms and the new ones.

With ``train.contrast_partial`` on, a failed episode that scored higher than its failure (the
better attempt the optimizer compares) adds the commands it typed up to where its score peaked:
on Map Reader with gold off, the free-command target typed "Go to the bathroom" twelve times
while exploration's attempts that took the coin (0.5) had typed ``move west``, ``take coin``.
The line then says "solved or advanced" (``prompts/command_forms_advanced.md``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from skillgrad.prompts import prompt_head, render_prompt
from skillgrad.skill.text import words
from skillgrad.tasks.views import view_of
from skillgrad.train.reflect import trajectory_id
from skillgrad.train.screens.specific import EpisodeObjects
from skillgrad.types import Edit, Trajectory

SOURCE = "commands"
"""``Edit.source`` of the command-forms line."""
PLACEHOLDER = "<object>"
MAX_FORMS = 12
"""Forms listed at most: a solved episode's detours (``look around``, ``inventory``) are listed
too, and the line stays a rule, not a transcript."""
_FORM = re.compile(r"`([^`\n]+)`")


def command_form(command: str, objects: EpisodeObjects) -> str | None:
    """``command`` with each token naming an object of ``objects``, or a number, as
    ``PLACEHOLDER`` (a run of them as one: ``put pineapple in towel rack`` -> ``put <object> in
    <object>``); None when no word of it is left (``[50]``, a guess: a value, not a form)."""
    out: list[str] = []
    for token in command.split():
        said = set(words(token))
        if said & objects.words or (said and all(w.isdigit() for w in said)):
            if not out or out[-1] != PLACEHOLDER:
                out.append(PLACEHOLDER)
        else:
            out.append(token)
    form = " ".join(out)
    return form if any(c.isalpha() for c in form.replace(PLACEHOLDER, "")) else None


def command_forms(solved: Sequence[Trajectory], objects: EpisodeObjects) -> list[str]:
    """The distinct forms of the commands the environment accepted in ``solved``, in order of
    first use, at most ``MAX_FORMS``; empty for trajectories of a kind without commands."""
    out: dict[str, str] = {}
    for t in solved:
        vocabulary = view_of(t).vocabulary(t)
        for command in vocabulary.commands if vocabulary else ():
            if (form := command_form(command, objects)) is not None:
                out.setdefault(form.casefold(), form)
    general = [form_pattern(f) for f in out.values() if PLACEHOLDER in f]
    kept = [f for f in out.values() if PLACEHOLDER in f or not any(g.fullmatch(f) for g in general)]
    return kept[:MAX_FORMS]


def form_pattern(form: str) -> re.Pattern[str]:
    """A placeholder form as a pattern of its instances (``take <object>`` matches ``take
    banana``: a fruit every played episode showed is no object to ``EpisodeObjects``, yet the
    general form already covers it)."""
    parts = [r"\S+(?: \S+)*" if t == PLACEHOLDER else re.escape(t) for t in form.split()]
    return re.compile(" ".join(parts), re.IGNORECASE)


SOLVED, ADVANCED = "command_forms", "command_forms_advanced"
"""The line's two wordings: forms of solved episodes only, or also of episodes that advanced
(``train.contrast_partial``: a failed attempt's commands up to where its score peaked)."""


def forms_line(forms: Sequence[str], wording: str = SOLVED) -> str:
    """The skill line listing ``forms`` (``prompts/command_forms.md``, or
    ``prompts/command_forms_advanced.md`` when some come from an episode that only advanced)."""
    placeholder = any(PLACEHOLDER in f for f in forms)
    note = render_prompt("command_forms_note", placeholder=PLACEHOLDER).rstrip("\n")
    shown = ", ".join(f"`{f}`" for f in forms)
    return "- " + render_prompt(wording, note=note if placeholder else "", forms=shown).rstrip("\n")


def held_line(skill: str) -> str | None:
    """The skill's command-forms line (either wording), if it holds one."""
    heads = tuple("- " + prompt_head(w) for w in (SOLVED, ADVANCED))
    return next((ln for ln in skill.splitlines() if ln.startswith(heads)), None)


def forms_edit(
    skill: str,
    solved: Sequence[Trajectory],
    shown: Sequence[Trajectory],
    step: int,
    advanced: Sequence[Trajectory] = (),
) -> Edit | None:
    """The command-forms edit of a step: ``solved``, its solved train episodes; ``advanced``,
    failed ones cut where their score peaked (their forms make the line say "solved or
    advanced"); ``shown``, every episode it played (the objects are the words some of them show
    and others do not). None when no episode has commands or the skill already lists every
    form."""
    objects = EpisodeObjects.build([view_of(t).vocabulary(t) for t in shown])
    new = command_forms([*solved, *advanced], objects)
    if not new:
        return None
    ids = tuple(dict.fromkeys(trajectory_id(step, t.item_id) for t in [*solved, *advanced]))
    why = f"command forms of {len(solved)} solved train episode(s) of step {step}"
    if advanced:
        why += f" and of {len(advanced)} that advanced without passing"
    held = held_line(skill)
    by_solved = {f.casefold() for f in command_forms(solved, objects)}
    wording = ADVANCED if any(f.casefold() not in by_solved for f in new) else SOLVED
    if held is None:
        return Edit(op="add", section="", content=forms_line(new, wording), rationale=why,
                    trajectory_ids=ids, source=SOURCE)  # fmt: skip
    old = _FORM.findall(held)
    known = {f.casefold() for f in old}
    merged = [*old, *(f for f in new if f.casefold() not in known)][:MAX_FORMS]
    if merged == old:
        return None
    if held.startswith("- " + prompt_head(ADVANCED)):
        wording = ADVANCED  # the forms it holds keep their word
    return Edit(op="replace", section="", anchor=held, content=forms_line(merged, wording),
                rationale=why, trajectory_ids=ids, source=SOURCE)  # fmt: skip


__all__ = [
    "MAX_FORMS",
    "PLACEHOLDER",
    "SOURCE",
    "command_form",
    "command_forms",
    "form_pattern",
    "forms_edit",
]
