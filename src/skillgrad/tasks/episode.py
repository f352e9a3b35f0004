"""What an environment episode says, in words: the scorer's feedback and the optimizer's view.

``episode_feedback`` sums an episode up (solved, or how it ended, its score, actions the
environment did not accept, repeated actions). ``episode_view`` is the compact rendering the
optimizer reads: the task, the first observation whole (a board game's board), the first steps and
the steps around where it went wrong, the commands the environment accepted there (also in free
mode, where the target never saw them), the gold action sequence of a train episode, the result.
Long episodes are cut, and the cut is said, so the optimizer never mistakes a cut for the agent's
behaviour.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

HEAD_STEPS = 3  # first steps always shown
AROUND = (1, 2)  # steps shown before / after the failing step
OBS_CHARS = 180  # per step observation
LIST_CHARS = 500  # accepted commands / reference sequence


WITHHELD = "(withheld: train.show_reference is off)"
MAX_DEMO_ACTIONS = 40
"""A gold sequence longer than this is no short demonstration: not replayed by the rollout, not
shown as a worked example (``train/examples.py``)."""


def _clip(text: Any, limit: int) -> str:
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def env_steps(steps: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for s in steps if s.get("type") == "env_step"]


def is_episode(steps: Sequence[dict[str, Any]]) -> bool:
    return any(s.get("type") == "env_reset" for s in steps)


def _longest_repeat(actions: list[str]) -> tuple[str, int]:
    best, run = ("", 0), 0
    for i, action in enumerate(actions):
        run = run + 1 if i and actions[i - 1].lower() == action.lower() else 1
        if run > best[1]:
            best = (action, run)
    return best


def episode_feedback(steps: Sequence[dict[str, Any]], score: float, passed: bool, end: str) -> str:
    """One paragraph: how the episode ended and what went wrong."""
    played = env_steps(steps)
    n = len(played)
    if passed:
        return f"solved in {n} steps (score {score:.2f})"
    ending = {
        "terminated": f"the episode ended at step {n} unsolved",
        "truncated": f"the environment cut the episode at step {n}",
        "failed": _failure(played[-1] if played else {}),
    }.get(end, f"step limit reached after {n} steps unsolved")
    parts = [f"{ending}; score {score:.2f}"]
    rejected = [s for s in played if s.get("valid") is False]
    if rejected:
        first = rejected[0]
        parts.append(
            f"{len(rejected)} of {n} actions were not commands the environment accepts "
            f"(first at step {first['step']}: {first['action']!r}{_as_listed(first)}"
            f"{_why(first)})"
        )
    action, repeats = _longest_repeat([s["action"] for s in played])
    if repeats >= 3:
        parts.append(f"the same action {action!r} {repeats} times in a row")
    if played:
        parts.append(f"last observation: {_clip(played[-1].get('observation'), 120)!r}")
    else:
        parts.append("no action was taken")
    return "; ".join(parts)


def _failure(step: dict[str, Any]) -> str:
    """How an episode whose ``step`` failed ended: the action and what the environment did."""
    error = _clip(step.get("env_error"), 300)
    action = _clip(step.get("action"), 120)
    return (
        f"the environment {error} on the action {action!r} at step {step.get('step')}, "
        "which ends the episode unsolved"
    )


def _as_listed(step: dict[str, Any]) -> str:
    """ ", listed as 'x'" for an action that differs from a listed command only in letter case."""
    form = step.get("listed_as")
    return f", listed as {_clip(form, 120)!r}" if isinstance(form, str) and form else ""


def _why(step: dict[str, Any]) -> str:
    """ ": reason" the environment gave for not accepting a step's action (``invalid_action``)."""
    reason = step.get("invalid_reason")
    return f": {_clip(reason, 160)}" if isinstance(reason, str) and reason.strip() else ""


def _start(observation: Any) -> list[str]:
    """The first observation whole (the environment process bounded it to the task's
    ``max_observation_chars``), its line breaks kept: a board is read by its rows."""
    rows = [line.rstrip() for line in str(observation or "").splitlines()]
    kept = [r for i, r in enumerate(rows) if r or (i and rows[i - 1])]  # no blank runs
    while kept and not kept[-1]:
        kept.pop()
    while kept and not kept[0]:
        kept.pop(0)
    if len(kept) <= 1:
        return [f"Start: {kept[0].strip() if kept else ''}"]
    return ["Start:", *(f"  {r}" if r else "" for r in kept)]


def failing_step(played: Sequence[dict[str, Any]]) -> int | None:
    """Index of where the episode went wrong: the first action the environment did not accept
    (or failed on), else the first repeat that changed nothing, else the last step."""
    for i, s in enumerate(played):
        if s.get("valid") is False or s.get("env_error"):
            return i
    for i in range(1, len(played)):
        same = played[i]["action"].lower() == played[i - 1]["action"].lower()
        if same and played[i].get("observation") == played[i - 1].get("observation"):
            return i
    return len(played) - 1 if played else None


def _runs(played: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """(first, last) index of each run of steps with the same action and the same answer:
    a model repeating itself costs the optimizer's prompt one line, not one per turn."""
    runs: list[tuple[int, int]] = []
    for i, s in enumerate(played):
        if runs:
            prev = played[runs[-1][1]]
            if (prev["action"], prev.get("observation")) == (s["action"], s.get("observation")):
                runs[-1] = (runs[-1][0], i)
                continue
        runs.append((i, i))
    return runs


def _shown(n: int, fail: int | None) -> list[int]:
    keep = set(range(min(HEAD_STEPS, n)))
    if fail is not None:
        keep |= set(range(max(0, fail - AROUND[0]), min(n, fail + AROUND[1] + 1)))
    if n:
        keep.add(n - 1)
    return sorted(keep)


def _step_lines(played: list[dict[str, Any]], fail: int | None) -> list[str]:
    runs = _runs(played)
    fail_run = next(
        (r for r, (a, b) in enumerate(runs) if fail is not None and a <= fail <= b), None
    )
    lines, last = [], -1
    for r in _shown(len(runs), fail_run):
        if r > last + 1:
            cut = runs[r - 1][1] - runs[last + 1][0] + 1
            lines.append(f"  …[{cut} steps cut]…")
        first, end = runs[r]
        s = played[first]
        rejected = s.get("valid") is False
        mark = f" [not an accepted command{_as_listed(s)}{_why(s)}]" if rejected else ""
        number = str(s["step"]) if first == end else f"{s['step']}-{played[end]['step']}"
        again = f" (the same {end - first + 1} times)" if end > first else ""
        lines.append(f"  {number}. > {_clip(s['action'], 120)!r}{mark}{again}")
        if s.get("env_error"):
            lines.append(f"     [the environment {_clip(s['env_error'], OBS_CHARS)}]")
        else:
            lines.append(f"     {_clip(s.get('observation'), OBS_CHARS)}")
        last = r
    return lines


def episode_view(
    steps: Sequence[dict[str, Any]],
    reference: Any,
    feedback: str,
    passed: bool = False,
    *,
    show_reference: bool = True,
) -> str:
    """The optimizer's compact view of one episode (see the module docstring); without
    ``show_reference`` (``train.show_reference: false``) the reference actions are withheld."""
    reset = next((s for s in steps if s.get("type") == "env_reset"), {})
    played = env_steps(steps)
    fail = None if passed else failing_step(played)
    lines = []
    if reset.get("task"):
        lines.append(f"Task: {_clip(reset['task'], 300)}")
    lines += _start(reset.get("observation"))
    lines.append(f"Steps ({len(played)}):")
    lines += _step_lines(played, fail) or ["  (none)"]
    if fail is not None:
        s = played[fail]
        lines.append(f"Where it went wrong: step {s['step']} ({_clip(s['action'], 120)!r})")
        accepted = s.get("valid_actions")
        if accepted:
            shown = _clip(" | ".join(accepted), LIST_CHARS)
            lines.append(f"Commands the environment accepted at step {s['step']}: {shown}")
    if isinstance(reference, list) and reference:
        gold = _clip(" | ".join(map(str, reference)), LIST_CHARS) if show_reference else WITHHELD
        lines.append(f"Reference actions that solve it (the target never sees them): {gold}")
    errors = [s.get("reason") for s in steps if s.get("type") == "error"]
    if errors:
        lines.append(f"Error: {_clip(errors[-1], 300)}")
    lines.append(f"Result: {_clip(feedback, 400)}")
    return "\n".join(lines)


__all__ = [
    "MAX_DEMO_ACTIONS",
    "env_steps",
    "episode_feedback",
    "episode_view",
    "failing_step",
    "is_episode",
]
