"""An environment episode's steps as typed records, and what the episode says in words.

The rollout (``tasks/environment.py``) builds ``EnvReset``, ``EnvStep``, ``EnvGold``, ``EnvShort``,
``EnvRoute``, ``EnvEnd`` and ``EpisodeError`` records, each tagged with its ``kind`` (the ``type``
of its JSON dict), and stores their ``to_json()`` in ``Trajectory.steps``; ``episode_steps`` reads
them back (old run directories included; ``episode_ending`` names the end). ``episode_feedback``
sums an episode up (solved, or how it ended, its score, actions the environment did not accept,
repeated actions; for an unsolved one ``episode_trail`` adds a stretch that went back and forth
between two actions and where its score moved). ``episode_view`` is the compact rendering the
optimizer reads: the task, the first observation whole (a board game's board), the first steps and
the steps around where it went wrong, the commands the environment accepted there (also in free
mode, where the target never saw them), the gold action sequence of a train episode, the result.
Long episodes are cut, and the cut is said, so the optimizer never mistakes a cut for the agent's
behaviour; a passing episode whose steps were cut also lists every command in order (its procedure
is what a rule would teach: a contrast call once read "…[7 steps cut]…" where the passing attempt's
read-then-act loop was).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from skillgrad.skill.text import cut

HEAD_STEPS = 3  # first steps always shown
AROUND = (1, 2)  # steps shown before / after the failing step
OBS_CHARS = 180  # per step observation
LIST_CHARS = 500  # accepted commands / reference sequence


WITHHELD = "(withheld: train.show_reference is off)"
MAX_DEMO_ACTIONS = 40
"""A gold sequence longer than this is no short demonstration: not replayed by the rollout, not
shown as a worked example (``tasks/episode_view.py``)."""


@dataclass(frozen=True)
class Vocabulary:
    """What an episode names and does, as the line screen and the command forms read it:
    ``seen``, the normalised words of its task and every observation; ``commands``, the
    commands the environment accepted, in order; ``acted``, the words those commands act on
    (after the verb: ``take apple`` acts on ``apple``); ``typed``, every command typed."""

    seen: frozenset[str]
    commands: tuple[str, ...]
    acted: frozenset[str]
    typed: tuple[str, ...] = ()
    """Every command the target typed, accepted or not, in order (``train/parting.py``)."""


@dataclass(frozen=True)
class EnvReset:
    """The episode's start: the task, the first observation and the commands listed then."""

    task: str = ""
    observation: str = ""
    valid_actions: list[str] | None = None
    kind: Literal["env_reset"] = "env_reset"

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.kind,
            "task": self.task,
            "observation": self.observation,
            "valid_actions": self.valid_actions,
        }


@dataclass(frozen=True)
class EnvStep:
    """One turn: the reply, the action read from it, whether the environment accepts it
    (``valid``: None when unknown), the commands listed before it, the answer, the score so
    far; ``listed_as`` (the listed form of an action that differs in letter case),
    ``env_error`` (the step failed) and ``invalid_reason`` (the environment's own word) only
    when they hold."""

    step: int = 0
    reply: str = ""
    action: str = ""
    valid: bool | None = None
    valid_actions: list[str] | None = None
    observation: str = ""
    reward: float = 0.0
    score: float = 0.0
    listed_as: str | None = None
    env_error: str | None = None
    invalid_reason: str | None = None
    kind: Literal["env_step"] = "env_step"

    @property
    def progress(self) -> float | None:
        """The score so far as a finite number; None when the stored value is none (a run
        directory or cache is read as it is: a string, NaN or a bool is no score)."""
        value = self.score
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return float(value) if math.isfinite(value) else None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.kind}
        out |= {k: getattr(self, k) for k in _STEP_KEYS}
        out |= {k: getattr(self, k) for k in _STEP_OPTIONAL if getattr(self, k) is not None}
        return out


_STEP_KEYS = ("step", "reply", "action", "valid", "valid_actions", "observation", "reward", "score")
_STEP_OPTIONAL = ("listed_as", "env_error", "invalid_reason")


@dataclass(frozen=True)
class EnvGold:
    """A failed train episode's gold sequence replayed: what the environment answered to each
    command; ``detours_cut`` when a shorter sequence without its detours was played instead."""

    observations: list[str] | None = None
    detours_cut: int | None = None
    kind: Literal["env_gold"] = "env_gold"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.kind}
        if self.detours_cut is not None:
            out["detours_cut"] = self.detours_cut
        out["observations"] = self.observations
        return out


@dataclass(frozen=True)
class EnvShort:
    """A passing train episode's commands without their detours, replayed from the same reset
    and still solving it: the commands kept and what the environment answered to each; a worked
    example shows this path instead of the search (``tasks/episode_view.py``)."""

    actions: list[str] | None = None
    observations: list[str] | None = None
    detours_cut: int | None = None
    kind: Literal["env_short"] = "env_short"

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.kind,
            "actions": self.actions,
            "observations": self.observations,
            "detours_cut": self.detours_cut,
        }

    def path(self) -> tuple[list[str], list[str]] | None:
        """(commands, answers) when the record holds two lists of text of one length (a run
        directory's steps are read as stored), else None."""
        acts, seen = self.actions, self.observations
        if not (isinstance(acts, list) and isinstance(seen, list)) or not acts:
            return None
        if len(acts) != len(seen) or not all(isinstance(x, str) for x in [*acts, *seen]):
            return None
        return list(acts), list(seen)


@dataclass(frozen=True)
class EnvRoute:
    """An unsolved train exploration attempt's way to its highest score, replayed from the
    same reset without its detours and refused commands: the commands kept and the score they
    reach (``score``). A resumed attempt (``train.explore_resume``) replays this instead of
    the search that first got there, and has that much more of the target's context window
    left for its own turns."""

    actions: list[str] | None = None
    score: float | None = None
    detours_cut: int | None = None
    kind: Literal["env_route"] = "env_route"

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.kind,
            "actions": self.actions,
            "score": self.score,
            "detours_cut": self.detours_cut,
        }

    def commands(self) -> list[str] | None:
        """The commands, when the record holds a non-empty list of text (a run directory's
        steps are read as stored), else None."""
        acts = self.actions
        if not isinstance(acts, list) or not acts or not all(isinstance(a, str) for a in acts):
            return None
        return list(acts)


ENDS: dict[str, str] = {
    "solved": "solved",
    "terminated": "ended by the game unsolved",
    "truncated": "cut by the environment",
    "failed": "broke the environment",
    "context_full": "filled the target's context window",
    "step_limit": "ran out of steps",
    "unsolved": "unsolved",
    "error": "failed on the infrastructure",
    "unrecorded": "ended in a way not recorded (an earlier version's cache)",
}
"""How an attempt ends, each in words: an episode's ``EnvEnd.end``; ``solved`` when it passed;
``unsolved``, a failed attempt of a kind without ends of its own (a chat reply); ``error`` when it
could not be scored; ``unrecorded``, an episode stored before the record existed."""


def ends_text(ends: Any) -> str:
    """How many attempts ended each way, in words ("4 ran out of steps, 1 solved"); "" when
    nothing but solved or unsolved is counted (a chat task's attempts say no more than that)
    or ``ends`` is no mapping of whole-number counts (an event or record is read as stored)."""
    if not isinstance(ends, dict) or not all(type(n) is int for n in ends.values()):
        return ""
    if not set(map(str, ends)) - {"solved", "unsolved"}:
        return ""
    return ", ".join(f"{n} {ENDS.get(str(end), str(end))}" for end, n in ends.items())


@dataclass(frozen=True)
class EnvEnd:
    """How the episode ended, as the rollout saw it: a key of ``ENDS`` (the game ended it,
    the environment cut it, the reply broke the environment, the conversation outgrew the
    target's context window, or the task's step limit)."""

    end: str = ""
    kind: Literal["env_end"] = "env_end"

    def to_json(self) -> dict[str, Any]:
        return {"type": self.kind, "end": self.end}


@dataclass(frozen=True)
class Ending:
    """How one attempt ended (``TrajectoryView.ending``): ``end``, a key of ``ENDS``; ``fell``,
    it ended unsolved below a score it had reached (it lost points it had won)."""

    end: str
    fell: bool = False


def episode_ending(steps: Sequence[Any], passed: bool, infra: bool) -> Ending:
    """How an episode ended, from its steps as stored (its last ``EnvEnd``; an ``end`` that is
    no key of ``ENDS``, or none recorded: ``unrecorded``)."""
    if infra:
        return Ending("error")
    if passed:
        return Ending("solved")
    ends = [r.end for r in episode_steps(steps) if isinstance(r, EnvEnd)]
    end = ends[-1] if ends else None
    scores = [p for s in env_steps(steps) if (p := s.progress) is not None]
    fell = bool(scores) and scores[-1] < max(scores)
    if isinstance(end, str) and end in ENDS and end not in ("solved", "unsolved"):
        return Ending(end, fell)
    return Ending("unrecorded", fell)


@dataclass(frozen=True)
class EpisodeError:
    """Why an episode could not go on (``source``: what failed, e.g. the environment)."""

    reason: str = ""
    source: str | None = None
    kind: Literal["error"] = "error"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.kind, "reason": self.reason}
        return out | ({"source": self.source} if self.source is not None else {})


def short_path(records: Sequence[Any]) -> tuple[list[str], list[str]] | None:
    """A passing episode's path without its detours (its ``EnvShort`` record's
    ``path()``), when one is recorded whole; else None."""
    return next((r.path() for r in records if isinstance(r, EnvShort)), None)


def peak_route(records: Sequence[Any]) -> list[str] | None:
    """An unsolved episode's shorter way to its highest score (its ``EnvRoute`` record's
    ``commands()``), when one is recorded whole; else None."""
    return next((r.commands() for r in records if isinstance(r, EnvRoute)), None)


EpisodeStep = EnvReset | EnvStep | EnvGold | EnvShort | EnvRoute | EnvEnd | EpisodeError
_RECORDS: dict[str, type[EpisodeStep]] = {
    "env_reset": EnvReset,
    "env_step": EnvStep,
    "env_gold": EnvGold,
    "env_short": EnvShort,
    "env_route": EnvRoute,
    "env_end": EnvEnd,
    "error": EpisodeError,
}


def episode_steps(steps: Sequence[Any]) -> list[EpisodeStep]:
    """The typed records of ``Trajectory.steps``: a key an old run directory's dict lacks takes
    its default, keys a record does not know are ignored, and a step of another kind (or no
    dict at all) is skipped. Values are kept as stored."""
    out: list[EpisodeStep] = []
    for s in steps:
        kind = s.get("type") if isinstance(s, dict) else None
        record = _RECORDS.get(kind) if isinstance(kind, str) else None
        if record is not None:
            names = {f.name for f in dataclasses.fields(record)} - {"kind"}
            out.append(record(**{k: v for k, v in s.items() if k in names}))
    return out


def _clip(text: Any, limit: int) -> str:
    return cut(text, limit, at_word=False)


def env_steps(steps: Sequence[Any]) -> list[EnvStep]:
    return [s for s in episode_steps(steps) if isinstance(s, EnvStep)]


def is_episode(steps: Sequence[Any]) -> bool:
    return any(isinstance(s, EnvReset) for s in episode_steps(steps))


def _longest_repeat(actions: list[str]) -> tuple[str, int]:
    best, run = ("", 0), 0
    for i, action in enumerate(actions):
        run = run + 1 if i and actions[i - 1].lower() == action.lower() else 1
        if run > best[1]:
            best = (action, run)
    return best


def episode_feedback(steps: Sequence[Any], score: float, passed: bool, end: str) -> str:
    """One paragraph: how the episode ended and what went wrong."""
    played = env_steps(steps)
    n = len(played)
    if passed:
        return f"solved in {n} steps (score {score:.2f})"
    ending = {
        "terminated": f"the episode ended at step {n} unsolved",
        "truncated": f"the environment cut the episode at step {n}",
        "failed": _failure(played[-1] if played else None),
        "context_full": f"the conversation no longer fit the target's context window after "
        f"{n} steps (models.target.n_ctx), unsolved",
    }.get(end, f"step limit reached after {n} steps unsolved")
    parts = [f"{ending}; score {score:.2f}"]
    rejected = [s for s in played if s.valid is False]
    if rejected:
        first = rejected[0]
        parts.append(
            f"{len(rejected)} of {n} actions were not commands the environment accepts "
            f"(first at step {first.step}: {first.action!r}{_as_listed(first)}"
            f"{_why(first)})"
        )
    action, repeats = _longest_repeat([s.action for s in played])
    if repeats >= 3:
        parts.append(f"the same action {action!r} {repeats} times in a row")
    if played:
        parts.append(f"last observation: {_clip(played[-1].observation, 120)!r}")
    else:
        parts.append("no action was taken")
    return "; ".join(parts)


SCORE_CHANGES = 4
"""Score changes an episode's feedback names at most (the later ones are counted)."""
BACK_AND_FORTH = 6
"""Alternating actions (``move south``, ``move north``, …) the feedback names from."""


def episode_trail(steps: Sequence[Any]) -> list[str]:
    """What an unsolved episode's feedback adds to ``episode_feedback``: the longest stretch
    that went back and forth between two actions, and where the score moved
    (``score_changes``)."""
    return [x for x in (back_and_forth(steps), score_changes(steps)) if x]


def back_and_forth(steps: Sequence[Any]) -> str | None:
    """The longest stretch of ``BACK_AND_FORTH`` or more actions alternating between two (up to
    case), in words; None when there is none. A target that oscillates between two rooms never
    repeats one action, so "the same action N times in a row" does not say it (measured on
    Coin Collector: ``move south``, ``move north``, … for twelve steps)."""
    played = env_steps(steps)
    said = [" ".join(s.action.split()).casefold() for s in played]
    run = [1] * len(said)
    for i in range(1, len(said)):
        if said[i] == said[i - 1]:
            continue
        alternating = i >= 2 and said[i] == said[i - 2]
        run[i] = run[i - 1] + 1 if alternating else 2
    longest = max(run, default=0)
    if longest < BACK_AND_FORTH:
        return None
    first = run.index(longest) - longest + 1
    a, b = (_clip(played[first + k].action, 80) for k in (0, 1))
    return (
        f"it went back and forth between {a!r} and {b!r} for {longest} actions in a row "
        f"from step {played[first].step}"
    )


def score_changes(steps: Sequence[Any]) -> str | None:
    """Where an unsolved episode's score moved, in words: ``the score rose to 0.25 at step 2
    ('take banana'), fell to 0.00 at step 4 ('put banana in bed')``; None when it never moved.
    What was done right before a lost game, and what lost it, is what a retry and the optimizer
    need, and the final score alone does not say it (Pecking Order falls back to 0). A stored
    score that is not a finite number is skipped."""
    moves: list[str] = []
    before = 0.0
    for s in env_steps(steps):
        score = s.progress
        if score is None or score == before:
            continue
        verb = "rose" if score > before else "fell"
        moves.append(f"{verb} to {score:.2f} at step {s.step} ({_clip(s.action, 80)!r})")
        before = score
    if not moves:
        return None
    more = len(moves) - SCORE_CHANGES
    tail = f", then changed {more} more time(s)" if more > 0 else ""
    return "the score " + ", ".join(moves[:SCORE_CHANGES]) + tail


def _failure(step: EnvStep | None) -> str:
    """How an episode whose ``step`` failed ended: the action and what the environment did."""
    error = _clip(step.env_error if step else None, 300)
    action = _clip(step.action if step else None, 120)
    return (
        f"the environment {error} on the action {action!r} at step {step.step if step else None}, "
        "which ends the episode unsolved"
    )


def _as_listed(step: EnvStep) -> str:
    """ ", listed as 'x'" for an action that differs from a listed command only in letter case."""
    form = step.listed_as
    return f", listed as {_clip(form, 120)!r}" if isinstance(form, str) and form else ""


def _why(step: EnvStep) -> str:
    """ ": reason" the environment gave for not accepting a step's action (``invalid_action``)."""
    reason = step.invalid_reason
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


def score_falls(played: Sequence[EnvStep]) -> list[int]:
    """Indices of the actions after which the episode's score fell (a stored score that is no
    finite number is skipped)."""
    out, before = [], 0.0
    for i, s in enumerate(played):
        score = s.progress
        if score is not None and score < before:
            out.append(i)
        before = before if score is None else score
    return out


def failing_step(played: Sequence[EnvStep]) -> int | None:
    """Index of where the episode went wrong: the first action the environment did not accept
    (or failed on), else the first action after which its score fell (the environment's own
    word: Pecking Order takes back the points of a task done out of order), else the first
    repeat that changed nothing, else the last step."""
    for i, s in enumerate(played):
        if s.valid is False or s.env_error:
            return i
    fell = score_falls(played)
    if fell:
        return fell[0]
    for i in range(1, len(played)):
        same = played[i].action.lower() == played[i - 1].action.lower()
        if same and played[i].observation == played[i - 1].observation:
            return i
    return len(played) - 1 if played else None


def _runs(played: list[EnvStep]) -> list[tuple[int, int]]:
    """(first, last) index of each run of steps with the same action and the same answer:
    a model repeating itself costs the optimizer's prompt one line, not one per turn."""
    runs: list[tuple[int, int]] = []
    for i, s in enumerate(played):
        if runs:
            prev = played[runs[-1][1]]
            if (prev.action, prev.observation) == (s.action, s.observation):
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


def _step_lines(played: list[EnvStep], fail: int | None) -> list[str]:
    runs = _runs(played)
    fail_run = next(
        (r for r, (a, b) in enumerate(runs) if fail is not None and a <= fail <= b), None
    )
    lines, last = [], -1
    for r in _shown(len(runs), fail_run):
        if r > last + 1:
            hidden = runs[r - 1][1] - runs[last + 1][0] + 1
            lines.append(f"  …[{hidden} steps cut]…")
        first, end = runs[r]
        s = played[first]
        mark = f" [not an accepted command{_as_listed(s)}{_why(s)}]" if s.valid is False else ""
        number = str(s.step) if first == end else f"{s.step}-{played[end].step}"
        again = f" (the same {end - first + 1} times)" if end > first else ""
        lines.append(f"  {number}. > {_clip(s.action, 120)!r}{mark}{again}")
        if s.env_error:
            lines.append(f"     [the environment {_clip(s.env_error, OBS_CHARS)}]")
        else:
            lines.append(f"     {_clip(s.observation, OBS_CHARS)}")
        last = r
    return lines


def episode_view(
    steps: Sequence[Any],
    reference: Any,
    feedback: str,
    passed: bool = False,
    *,
    show_reference: bool = True,
) -> str:
    """The optimizer's compact view of one episode (see the module docstring); without
    ``show_reference`` (``train.show_reference: false``) the reference actions are withheld."""
    records = episode_steps(steps)
    reset = next((s for s in records if isinstance(s, EnvReset)), EnvReset())
    played = [s for s in records if isinstance(s, EnvStep)]
    fail = None if passed else failing_step(played)
    lines = []
    if reset.task:
        lines.append(f"Task: {_clip(reset.task, 300)}")
    lines += _start(reset.observation)
    lines.append(f"Steps ({len(played)}):")
    lines += _step_lines(played, fail) or ["  (none)"]
    runs = len(_runs(played))
    if passed and len(_shown(runs, None)) < runs:  # the view cut some of its steps
        commands = _clip(" | ".join(s.action for s in played), LIST_CHARS)
        lines.append(f"Every command, in order: {commands}")
    short = short_path(records)
    if passed and short is not None:
        commands = _clip(" | ".join(short[0]), LIST_CHARS)
        lines.append(f"The same without its detours (replayed, it still solves): {commands}")
    if fail is not None:
        s = played[fail]
        lines.append(f"Where it went wrong: step {s.step} ({_clip(s.action, 120)!r})")
        if s.valid_actions:
            shown = _clip(" | ".join(s.valid_actions), LIST_CHARS)
            lines.append(f"Commands the environment accepted at step {s.step}: {shown}")
    if isinstance(reference, list) and reference:
        gold = _clip(" | ".join(map(str, reference)), LIST_CHARS) if show_reference else WITHHELD
        lines.append(f"Reference actions that solve it (the target never sees them): {gold}")
    errors = [s.reason for s in records if isinstance(s, EpisodeError)]
    if errors:
        lines.append(f"Error: {_clip(errors[-1], 300)}")
    lines.append(f"Result: {_clip(feedback, 400)}")
    return "\n".join(lines)


__all__ = [
    "ENDS",
    "MAX_DEMO_ACTIONS",
    "Ending",
    "EnvEnd",
    "EnvGold",
    "EnvReset",
    "EnvRoute",
    "EnvShort",
    "EnvStep",
    "EpisodeError",
    "EpisodeStep",
    "Vocabulary",
    "back_and_forth",
    "ends_text",
    "env_steps",
    "episode_ending",
    "episode_feedback",
    "episode_steps",
    "episode_trail",
    "episode_view",
    "failing_step",
    "is_episode",
    "peak_route",
    "score_changes",
    "score_falls",
    "short_path",
]
