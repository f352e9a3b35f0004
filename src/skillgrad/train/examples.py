"""Worked examples (an edit kind): one short demonstration built by code from a TRAIN trajectory.

Small targets follow a shown reply form better than an abstract rule (docs/method.md, measured on
the reading-comprehension task and Pecking Order). An ``example`` edit adds one demonstration to
the skill's ``## Examples`` section: a train item's input and either the target's own passing
reply, or, for a failed item, its reference when the task's scorer passes that reference (the
expected reply form, shown exactly). The text comes from real data, never from the optimizer, so
a small optimizer cannot garble it. Examples are gated like any edit and bounded in number
(``train.max_examples``) and length (``train.max_example_tokens``).

A trajectory kind renders its own demonstration (``register_renderer``): the default is
input -> final reply; a multi-turn trajectory (tool calls) renders its sequence of actions; an
environment episode renders its task and commands — for a failed train episode, the
environment's gold sequence (its reference, which the environment rollout keeps for train
episodes only) — with what the environment said before each command when that fits the budget
(for a failed episode, the answers to its gold sequence replayed: ``env_gold``). Val and test
items never appear: an example whose text copies one (the leak check over val and test,
``ExampleGuard``) is refused before it is proposed. With ``train.explore: on`` the target's own
passing exploration attempts at train items come first ("self-found": no reference needed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from skillgrad.skill.document import Skill
from skillgrad.skill.text import fence_for, sentences, words
from skillgrad.tasks.episode import MAX_DEMO_ACTIONS
from skillgrad.train.screens.guard import ExampleGuard
from skillgrad.types import Edit, Item, Trajectory

EXAMPLES_HEADING = "Examples"
SOURCE = "example"
"""``Edit.source`` of an example edit (an ``add`` to the Examples section)."""
SELF_FOUND = "self-found"
"""The origin of an example built from the target's own passing exploration attempt."""

ExampleRenderer = Callable[[Trajectory, str, int], str]
"""(trajectory, the reply to show, max characters of the input) -> the example's text."""


def _user_input(t: Trajectory) -> str:
    return next((m.content for m in t.messages if m.role == "user"), "")


def _cut(text: str, limit: int) -> str:
    """One line of at most ``limit`` characters, cut at a word boundary with an ellipsis."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    head = flat[: max(1, limit - 1)].rsplit(" ", 1)[0]
    return head + " …"


def shown_reply(reply: str) -> str:
    """The reply as the skill shows it: one line after "Reply: ", or a multi-line reply in a
    fence no line of it can close (``fence_for``), so a line of it can never read as a heading
    of the skill."""
    text = reply.strip()
    if "\n" not in text:
        return f"Reply: {text}"
    fence = fence_for(text)
    return f"Reply:\n{fence}\n{text}\n{fence}"


def render_reply(t: Trajectory, reply: str, limit: int) -> str:
    """The default demonstration: the task's input (cut to ``limit``), then the reply exactly."""
    return f"Input: {_cut(_user_input(t), limit)}\n{shown_reply(reply)}"


def render_actions(t: Trajectory, reply: str, limit: int) -> str:
    """A multi-turn demonstration: the task's input, then each action in order (tool calls with
    their arguments, environment commands), then the final reply if there is one."""
    lines = [f"Input: {_cut(_user_input(t), limit)}"]
    for s in t.steps:
        if s.get("type") == "tool_call":
            lines.append(f"Call: {s.get('tool', '')}({_cut(str(s.get('arguments', '')), 120)})")
        elif "action" in s:
            lines.append(f"Action: {_cut(str(s['action']), 120)}")
    if reply.strip():
        lines.append(shown_reply(reply))
    return "\n".join(lines)


EPISODE_STEPS = ("env_reset", "env_step")
OBSERVATION_CHARS = 160  # an observation shown in a demonstration, at most
_MIN_HEAD = 24


def _object_words(action: str) -> list[str]:
    """The words a command acts on: after its verb, three letters or more ("put 2 pineapples
    in box" -> pineapples, box; "move west" -> west)."""
    return [w for w in words(action)[1:] if len(w) >= 3]


def shown_observation(obs: str, action: str, limit: int = OBSERVATION_CHARS) -> str:
    """An observation as a demonstration shows it before ``action``: whole when it fits
    ``limit``, else its start cut at a word — and when a word the command acts on is named only
    past the cut, the start cut shorter and the first sentence that names it, so the example
    shows why the command was typed (measured on Coin Collector: a room described up to its
    exits hid "To the West you see the pantry." before `move west`, and the target copied
    `move west` into rooms without a west exit). Nothing changes when the start names them all
    or no sentence does."""
    flat = " ".join(obs.split())
    head = _cut(flat, limit)
    if len(flat) <= limit:
        return head
    shown = set(words(head))
    missing = {w for w in _object_words(action) if w not in shown}
    sentence = next((x for x in sentences(flat) if missing & set(words(x))), "")
    room = limit - len(sentence) - 1
    if not sentence or room < _MIN_HEAD:
        return head
    return f"{_cut(flat, room)} {sentence}"


def _episode_task(t: Trajectory) -> str:
    first = next((s for s in t.steps if s.get("type") == "env_reset"), {})
    return str(first.get("task") or first.get("observation") or _user_input(t))


def render_episode(t: Trajectory, reply: str, limit: int) -> str:
    """An environment episode (``tasks/environment.py``): the task (or the first observation,
    cut to ``limit``), then the commands one per line, exactly as the environment takes them."""
    actions = [a.strip() for a in reply.split("\n") if a.strip()]
    return "\n".join([f"Task: {_cut(_episode_task(t), limit)}", *(f"Action: {a}" for a in actions)])


def episode_observations(t: Trajectory, n_actions: int) -> list[str] | None:
    """What the environment showed before each of the demonstration's ``n_actions`` commands:
    the reset observation, then the answer to each command before the next — the episode's own
    (a passing episode) or those of its gold sequence replayed (``env_gold``, a failed train
    episode). None when they are not recorded or do not line up with the commands."""
    reset = next((s for s in t.steps if s.get("type") == "env_reset"), None)
    if reset is None:
        return None
    if t.score.passed:
        after = [str(s.get("observation", "")) for s in t.steps if s.get("type") == "env_step"]
    else:
        gold = next((s for s in t.steps if s.get("type") == "env_gold"), None)
        found = gold.get("observations") if gold else None
        if not isinstance(found, list):
            return None
        after = [str(o) for o in found]
    if len(after) != n_actions:
        return None
    return [str(reset.get("observation", "")), *after[:-1]]


def render_observed_episode(t: Trajectory, reply: str, limit: int) -> str:
    """An environment episode with what the environment said before each command: the task
    (cut to ``limit``), then pairs of ``Observation:`` and ``Action:``. An observation is one
    line of at most ``OBSERVATION_CHARS`` (``shown_observation``: longer ones are cut, so an
    episode of long observations does not fit the example budget and its commands alone are
    shown: ``FALLBACKS``). Plain ``render_episode`` when the observations are not recorded."""
    actions = [a.strip() for a in reply.split("\n") if a.strip()]
    seen = episode_observations(t, len(actions))
    if seen is None:
        return render_episode(t, reply, limit)
    lines = [f"Task: {_cut(_episode_task(t), limit)}"]
    for obs, action in zip(seen, actions, strict=True):
        lines += [f"Observation: {shown_observation(obs, action)}", f"Action: {action}"]
    return "\n".join(lines)


def episode_actions(t: Trajectory) -> str | None:
    """The commands a demonstration of episode ``t`` shows, one per line: a passing episode's
    own actions; a failed TRAIN episode's gold sequence (the environment's reference, kept for
    train episodes only); None when neither exists or the sequence is too long."""
    if t.score.passed:
        actions = [str(s.get("action", "")) for s in t.steps if s.get("type") == "env_step"]
    elif isinstance(t.reference, list) and all(isinstance(a, str) for a in t.reference):
        actions = list(t.reference)
    else:
        return None
    actions = [" ".join(a.split()) for a in actions if a.strip()]
    if not actions or len(actions) > MAX_DEMO_ACTIONS:
        return None
    return "\n".join(actions)


RENDERERS: dict[str, ExampleRenderer] = {
    "reply": render_reply,
    "actions": render_actions,
    "episode": render_observed_episode,
}
FALLBACKS: dict[str, ExampleRenderer] = {"episode": render_episode}
"""A shorter rendering tried when a kind's own does not fit ``train.max_example_tokens``: an
episode's commands without the observations."""


def register_renderer(kind: str, renderer: ExampleRenderer) -> None:
    """Let a trajectory kind (``trajectory_kind``) render its own demonstrations."""
    RENDERERS[kind] = renderer


def trajectory_kind(t: Trajectory) -> str:
    """A step's own ``kind`` when a rollout names one, ``actions`` for a multi-turn trajectory
    (tool calls or environment actions), else ``reply``."""
    for s in t.steps:
        kind = s.get("kind")
        if isinstance(kind, str) and kind in RENDERERS:
            return kind
    if any(s.get("type") in EPISODE_STEPS for s in t.steps):
        return "episode"
    if any(s.get("type") == "tool_call" or "action" in s for s in t.steps):
        return "actions"
    return "reply"


def example_reply(t: Trajectory, item: Item | None, scorer: Any) -> str | None:
    """The reply a demonstration shows: a passing trajectory's own output; for a failed one the
    item's reference, only when the task's scorer (``score(output, item)``) passes it (so the
    shown form is what the grader wants); an environment episode's commands
    (``episode_actions``); None when none of these holds."""
    if t.error or t.infra_error:
        return None
    if trajectory_kind(t) == "episode":
        return episode_actions(t)
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
    """The demonstrations of the skill's Examples section (blank-line separated blocks)."""
    return [b.strip() for b in _examples_body(skill_text).split("\n\n") if b.strip()]


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
    (refused or rejected before) are skipped. None once the skill holds ``max_examples``
    examples. ``context`` (the task's ``example_context``) gives the line that shows what the
    reply depended on besides the input, e.g. the functions a question was asked with."""
    shown = example_blocks(skill)
    if len(shown) >= max_examples:
        return ExampleChoice(None, f"the skill already holds {len(shown)} examples")
    refused: list[tuple[str, str]] = []
    for t, attempt in _candidates(trajs, found, items, set(tried)):
        item = items.get(t.item_id)
        reply = example_reply(t, item, scorer)
        if reply is None or "\n\n" in reply.strip():
            continue
        text = _fit(t, reply, max_tokens, count, _context_line(context, item))
        if text is None or any(text == b for b in shown):
            continue
        if why := guard.refusal(text):
            refused.append((t.item_id, why))
            continue
        return ExampleChoice(_example_edit(t, text, step, attempt), refused=tuple(refused))
    return ExampleChoice(None, "no train trajectory gives a demonstration", tuple(refused))


def _candidates(
    trajs: Sequence[Trajectory],
    found: Sequence[tuple[Trajectory, str]],
    items: Mapping[str, Item],
    skip: set[str],
) -> list[tuple[Trajectory, str]]:
    """The trajectories a demonstration may come from, in order of preference, each with its
    exploration attempt's id ('' for the step's own rollout): self-found first (shortest
    input first), then the batch's failed items, then its passing ones."""
    own = sorted(
        ((t, a) for t, a in found if t.item_id in items and t.item_id not in skip),
        key=lambda p: (len(_user_input(p[0])), p[0].item_id),
    )
    ranked = sorted(
        (t for t in trajs if t.item_id in items and t.item_id not in skip),
        key=lambda t: (t.score.passed, len(_user_input(t)), t.item_id),
    )
    return [*own, *((t, "") for t in ranked)]


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
    line = _cut(text, CONTEXT_CHARS)
    return line if line[:1].isalpha() else _cut(f"Context: {line}", CONTEXT_CHARS)


def _fit(
    t: Trajectory, reply: str, max_tokens: int, count: Callable[[str], int], context: str = ""
) -> str | None:
    """The rendered demonstration within ``max_tokens``: the ``context`` line first (when
    given), then the input, cut shorter until it fits; then the kind's shorter rendering
    (``FALLBACKS``) the same way; None when even that does not fit (the reply and the context
    are never cut here)."""
    kind = trajectory_kind(t)
    renders = [RENDERERS.get(kind, render_reply)]
    if kind in FALLBACKS:
        renders.append(FALLBACKS[kind])
    head = f"{context}\n" if context else ""
    for render in renders:
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
    "FALLBACKS",
    "RENDERERS",
    "SELF_FOUND",
    "SOURCE",
    "ExampleChoice",
    "ExampleGuard",
    "ExampleRenderer",
    "choose_example",
    "episode_actions",
    "episode_observations",
    "example_attempt",
    "example_blocks",
    "example_item",
    "example_lines",
    "example_reply",
    "register_renderer",
    "render_actions",
    "render_episode",
    "render_observed_episode",
    "render_reply",
    "shown_observation",
    "shown_reply",
    "trajectory_kind",
]
