"""Worked examples (an edit kind): one short demonstration built by code from a TRAIN trajectory.

Small targets follow a shown reply form better than an abstract rule (docs/method.md, measured on
the reading-comprehension task and Pecking Order). An ``example`` edit adds one demonstration to
the skill's ``## Examples`` section: a train item's input and either the target's own passing
reply, or, for a failed item, its reference when the task's scorer passes that reference (the
expected reply form, shown exactly). The text comes from real data, never from the optimizer, so
a small optimizer cannot garble it. Examples are gated like any edit and bounded in number
(``train.max_examples``) and length (``train.max_example_tokens``).

A trajectory kind renders its own demonstration through its view (``tasks/views.py``): the
default is input -> final reply (``tasks/reply_view.py``); a multi-turn trajectory (tool calls)
its sequence of actions (``tasks/tools_view.py``); an environment episode its task and commands,
with what the environment said before each (``tasks/episode_view.py``). Val and test
items never appear: an example whose text copies one (the leak check over val and test,
``ExampleGuard``) is refused before it is proposed. With ``train.explore: on`` the target's own
passing exploration attempts at train items come first ("self-found": no reference needed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from skillgrad.skill.document import Skill
from skillgrad.skill.match import blocks
from skillgrad.skill.package import SKILL_FILE, SkillPackage, is_package_text
from skillgrad.skill.text import cut
from skillgrad.tasks.reply_view import render_reply, shown_reply, user_input
from skillgrad.tasks.tools_view import render_actions
from skillgrad.tasks.views import ExampleRenderer, view_of
from skillgrad.train.screens.guard import ExampleGuard
from skillgrad.types import Edit, Item, Trajectory

EXAMPLES_HEADING = "Examples"
SOURCE = "example"
"""``Edit.source`` of an example edit (an ``add`` to the Examples section)."""
SELF_FOUND = "self-found"
"""The origin of an example built from the target's own passing exploration attempt."""


RENDERERS: dict[str, ExampleRenderer] = {"reply": render_reply, "actions": render_actions}


def register_renderer(kind: str, renderer: ExampleRenderer) -> None:
    """Let a trajectory kind (``trajectory_kind``) render its own demonstrations."""
    RENDERERS[kind] = renderer


def trajectory_kind(t: Trajectory) -> str:
    """A step's own ``kind`` when a rollout names one, else the kind of the view of ``t``
    (``tasks/views.py``: ``episode``, ``actions`` for tool calls or actions, ``reply``)."""
    for s in t.steps:
        kind = s.get("kind")
        if isinstance(kind, str) and kind in RENDERERS:
            return kind
    return view_of(t).kind


def _renderers(t: Trajectory) -> tuple[ExampleRenderer, ...]:
    """The demonstration renderings of ``t``'s kind, the preferred first."""
    kind, view = trajectory_kind(t), view_of(t)
    if view.kind == kind:
        return view.examples
    return (RENDERERS.get(kind, render_reply),)


def example_reply(t: Trajectory, item: Item | None, scorer: Any) -> str | None:
    """The reply a demonstration shows: a passing trajectory's own output; for a failed one the
    item's reference, only when the task's scorer (``score(output, item)``) passes it (so the
    shown form is what the grader wants); as the view of ``t``'s kind shows it (an environment
    episode: its commands); None when none of these holds."""
    if t.error or t.infra_error:
        return None
    reply = _reply_or_reference(t, item, scorer)
    view = view_of(t)
    return view.example_reply(t, reply) if trajectory_kind(t) == view.kind else reply


def _reply_or_reference(t: Trajectory, item: Item | None, scorer: Any) -> str | None:
    if t.score.passed:
        return t.output
    if item is None or not isinstance(item.reference, (str, int, float)):
        return None
    reference = str(item.reference)
    score = getattr(scorer, "score", None)
    if not callable(score) or not reference.strip():
        return None
    try:
        ok = bool(score(reference, item).passed)
    except Exception:  # a scorer that cannot take its own reference: no demonstration
        return None
    return reference if ok else None


def _examples_body(skill_text: str) -> str:
    """The own text of the skill's ``## Examples`` section (exact title), or ''."""
    for section in Skill(skill_text).sections():
        if section.path and section.path[-1] == EXAMPLES_HEADING:
            return section.body
    return ""


def example_blocks(skill_text: str) -> list[str]:
    """The demonstrations of the skill's Examples section: its blocks separated by blank lines
    outside code (a fenced multi-line reply with blank lines in it is one demonstration)."""
    return blocks(_examples_body(skill_text))


def without_examples(skill: Skill) -> Skill:
    """``skill`` with every ``## Examples`` section cut, heading and demonstrations (a package:
    in its SKILL.md): its rules alone, what a target that copies a demonstration's objects is
    given to follow instead (``skillgrad transfer --rules-alone``). The same skill when it holds
    none."""
    if is_package_text(skill.text):
        pkg = SkillPackage.from_bundle(skill.text)
        head, body = pkg.editable(SKILL_FILE) or ("", "")
        cut_body = without_examples(Skill(body)).text
        return (
            skill
            if cut_body == body
            else Skill(pkg.with_file(SKILL_FILE, head + cut_body).bundle())
        )
    spans = [
        (s.start, s.end) for s in skill.sections() if s.path and s.path[-1] == EXAMPLES_HEADING
    ]
    if not spans:
        return skill
    lines = skill.text.split("\n")
    dropped = {i for start, end in spans for i in range(start, end)}  # a nested one: inside
    kept = [line for i, line in enumerate(lines) if i not in dropped]
    return Skill("\n".join(kept).rstrip() + "\n" if any(x.strip() for x in kept) else "")


def example_lines(skill_text: str) -> set[str]:
    """Every non-empty line of the Examples section, stripped: not rules (the optimizer is not
    offered them to rewrite) and allowed to copy their own train item (leak check)."""
    return {x.strip() for x in _examples_body(skill_text).split("\n") if x.strip()}


@dataclass(frozen=True)
class ExampleChoice:
    """A chosen demonstration (``edit``) or why there is none (``reason``), with what was
    refused on the way (item id -> reason)."""

    edit: Edit | None
    reason: str = ""
    refused: tuple[tuple[str, str], ...] = ()


def choose_example(
    trajs: Sequence[Trajectory],
    items: Mapping[str, Item],
    scorer: Any,
    *,
    skill: str,
    step: int,
    tried: Iterable[str],
    max_examples: int,
    max_tokens: int,
    count: Callable[[str], int],
    guard: ExampleGuard,
    context: Callable[[Item], str] | None = None,
    found: Sequence[tuple[Trajectory, str]] = (),
) -> ExampleChoice:
    """One demonstration from the step's TRAIN trajectories: the target's own passing
    exploration attempts (``found``: (trajectory, attempt id), ``train/explore.py``) first,
    then failed items whose reference the scorer passes (they show the form the target got
    wrong), then passing items; among those the shortest; items already shown or ``tried``
    (refused or rejected before) are skipped. Within each of the two groups (self-found; the
    step's own), a demonstration in its kind's fullest rendering that fits comes before one
    cut to a shorter rendering: an episode with the observation each command answered, before
    one that lists its commands alone (measured on Coin Collector: the first self-found
    attempt, 10 commands, fitted only as bare commands, while a 2- and a 4-command one fitted
    whole).
    None once the skill holds ``max_examples`` examples. ``context`` (the task's
    ``example_context``) gives the line that shows what the reply depended on besides the
    input, e.g. the functions a question was asked with."""
    shown = example_blocks(skill)
    if len(shown) >= max_examples:
        return ExampleChoice(None, f"the skill already holds {len(shown)} examples")
    refused: dict[str, str] = {}
    for group in _candidates(trajs, found, items, set(tried)):
        ready = [
            (t, attempt, reply, _context_line(context, items.get(t.item_id)))
            for t, attempt in group
            if (reply := example_reply(t, items.get(t.item_id), scorer)) is not None
        ]
        depth = max((len(_renderers(t)) for t, *_ in ready), default=0)
        for level in range(depth):
            for t, attempt, reply, line in ready:
                views = _renderers(t)
                if level >= len(views) or t.item_id in refused:
                    continue
                text = _fit_view(t, reply, max_tokens, count, line, views[level])
                if text is None or len(blocks(text)) != 1 or any(text == b for b in shown):
                    continue  # too long, more than one demonstration as read, or shown
                if why := guard.refusal(text):
                    refused[t.item_id] = why
                    continue
                edit = _example_edit(t, text, step, attempt)
                return ExampleChoice(edit, refused=tuple(refused.items()))
    return ExampleChoice(None, "no train trajectory gives a demonstration", tuple(refused.items()))


def _candidates(
    trajs: Sequence[Trajectory],
    found: Sequence[tuple[Trajectory, str]],
    items: Mapping[str, Item],
    skip: set[str],
) -> tuple[list[tuple[Trajectory, str]], list[tuple[Trajectory, str]]]:
    """The trajectories a demonstration may come from, in two groups in order of preference,
    each with its exploration attempt's id ('' for the step's own rollout): self-found
    (shortest input first); then the batch's failed items, then its passing ones."""
    own = sorted(
        ((t, a) for t, a in found if t.item_id in items and t.item_id not in skip),
        key=lambda p: (len(user_input(p[0])), p[0].item_id),
    )
    ranked = sorted(
        (t for t in trajs if t.item_id in items and t.item_id not in skip),
        key=lambda t: (t.score.passed, len(user_input(t)), t.item_id),
    )
    return own, [(t, "") for t in ranked]


def _example_edit(t: Trajectory, text: str, step: int, attempt: str) -> Edit:
    """The example edit of a demonstration: its train item first in ``trajectory_ids``; a
    self-found one also names the exploration attempt it shows (``example_attempt``)."""
    if attempt:
        why = f"({SELF_FOUND}: its exploration attempt {attempt} passed)"
    else:
        why = "(its reference, scored as passing)" if not t.score.passed else "(its reply)"
    ids = (f"step_{step:04d}/{t.item_id}",)
    return Edit(
        op="add",
        section=EXAMPLES_HEADING,
        content=text,
        rationale=f"worked example from train item {t.item_id} {why}",
        trajectory_ids=(*ids, f"step_{step:04d}/{attempt}") if attempt else ids,
        source=SOURCE,
    )


CONTEXT_CHARS = 200
"""Most characters of a demonstration's context line (``Task.example_context``)."""


def _context_line(context: Callable[[Item], str] | None, item: Item | None) -> str:
    """The demonstration's context line: the task's ``example_context`` of the item on one
    line (cut to ``CONTEXT_CHARS``), or '' when the task has none or it fails. A line not
    starting with a letter is shown after "Context: ", so it can never read as a
    heading, list item ("1. …" too), fence or table row of the skill."""
    if context is None or item is None:
        return ""
    try:
        text = context(item)
    except Exception:  # a task's hook failing on one item: that example shows no context
        return ""
    if not isinstance(text, str) or not text.strip():
        return ""
    line = cut(text, CONTEXT_CHARS)
    return line if line[:1].isalpha() else cut(f"Context: {line}", CONTEXT_CHARS)


def _fit(
    t: Trajectory, reply: str, max_tokens: int, count: Callable[[str], int], context: str = ""
) -> str | None:
    """The rendered demonstration within ``max_tokens``: the ``context`` line first (when
    given), then the input, cut shorter until it fits; then the kind's shorter renderings
    (``TrajectoryView.examples``) the same way; None when even those do not fit (the reply and
    the context are never cut here)."""
    for render in _renderers(t):
        if (text := _fit_view(t, reply, max_tokens, count, context, render)) is not None:
            return text
    return None


def _fit_view(
    t: Trajectory,
    reply: str,
    max_tokens: int,
    count: Callable[[str], int],
    context: str,
    render: ExampleRenderer,
) -> str | None:
    """``render``'s demonstration within ``max_tokens``, its input cut shorter until it fits;
    None when it does not fit."""
    head = f"{context}\n" if context else ""
    for limit in (400, 240, 160, 100, 60):
        text = head + render(t, reply, limit)
        if count(text) <= max_tokens:
            return text
    return None


def example_item(edit: Edit) -> str:
    """The train item id an example edit was built from."""
    return edit.trajectory_ids[0].split("/", 1)[-1] if edit.trajectory_ids else ""


def example_attempt(edit: Edit) -> str:
    """The exploration attempt a self-found example shows (its cache id), or ''."""
    ids = edit.trajectory_ids
    return ids[1].split("/", 1)[-1] if edit.source == SOURCE and len(ids) > 1 else ""


__all__ = [
    "EXAMPLES_HEADING",
    "RENDERERS",
    "SELF_FOUND",
    "SOURCE",
    "ExampleChoice",
    "ExampleGuard",
    "ExampleRenderer",
    "choose_example",
    "example_attempt",
    "example_blocks",
    "example_item",
    "example_lines",
    "example_reply",
    "register_renderer",
    "render_actions",
    "render_reply",
    "shown_reply",
    "trajectory_kind",
    "without_examples",
]
