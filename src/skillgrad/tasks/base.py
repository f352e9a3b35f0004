"""The Task Protocol, the split names, the helpers every rollout kind shares, and the base of
the single-turn kinds (``SingleTurnTask``: one target call, its ``Reply``).

A task loads its splits and rolls one item out with a skill (the system prompt) on a target
backend, returning a scored Trajectory. The gold reference goes to the scorer and into the
trajectory (for the optimizer); it is never put into the target's messages.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from skillgrad.errors import PromptTooLongError, SkillgradError, SystemicError
from skillgrad.executors import RolloutExecutor
from skillgrad.models.base import ModelBackend
from skillgrad.skill.document import skill_hash
from skillgrad.skill.package import prompt_text
from skillgrad.types import ChatRequest, Completion, Item, Message, Score, Trajectory, Usage

Split = Literal["train", "val", "test"]
SPLITS: tuple[Split, ...] = ("train", "val", "test")


@runtime_checkable
class Task(Protocol):
    """Contract:

    - ``load_split(split)`` returns the items of ``"train"``, ``"val"`` or ``"test"`` with
      unique ids, the same list every time (seeded), or raises ``DataError`` saying which file,
      line and field is wrong. Items are never mutated afterwards.
    - ``rollout(item, skill, backend)`` runs the target with ``skill`` as its system prompt and
      returns a scored Trajectory. A failure of this one item (bad output, a transient model
      error that survived retries, a tool crash) is returned as a trajectory with ``error`` set
      and score 0 — never raised. Only systemic failures raise (``errors.SystemicError``:
      ``PermanentModelError``, ``BudgetExceeded``, ``ConfigError``, ...); a target call that
      outlived its retries is missing data (``infra_error``), and a scorer raising on the
      reply is the item's score 0 with the error (``scorer_failure``). The rule is drawn in
      ``skillgrad/errors.py``.
    - The item's ``reference`` never reaches the target's messages.

    Optional abilities (the built-in tasks declare them; read them through ``task_abilities``,
    which fills the defaults for tasks that have only ``load_split`` and ``rollout``):

    - ``deterministic: bool`` (default True): the same output always gets the same score; False
      when the task's scorer is an LLM judge. A ``scorer`` attribute's own flag also counts.
    - ``max_tokens: int`` (default ``DEFAULT_MAX_TOKENS``): the target's completion cap per
      call, used by the cost preflight.
    - ``bind_judge(backend)`` (default: no-op): receive the model that grades outputs (the
      run binds its optimizer, so judge calls are cached, metered and budgeted).
    - ``bind_executor(executor)`` (default: none; the task is not heavy): receive the
      ``skillgrad.executors`` executor of ``hardware.executor`` that runs the heavy, model-free
      part of each rollout (sandbox judging, a whole agent run) as a picklable job, or (the
      environment task) where its environment processes live. Model calls never go into a
      job: they stay on the driver with the cache, budget and limits.
    - ``example_context(item) -> str`` (default: none): one line a worked example built from
      ``item`` shows before its input — what the right reply depended on besides the user's
      words (BFCL: the functions the question was asked with). Never the reference.
    - ``check_ready()`` (default: no-op): raise ``ConfigError`` when the task cannot run at all
      (an environment that cannot be built: a missing package, an unknown id), saying how to
      fix it; the session calls it once, at start, before any model call.
    - ``exploration_task(replayed: int = 0) -> Task`` (default: the task itself): the variant
      of the task that train-time exploration runs (``train/explore.py``), with what a trainer
      may use on train items and never at val/test (an environment shows its valid actions each
      turn). Its rollouts score exactly as the task's own. ``replayed`` (> 0 only with
      ``train.explore_resume``): the attempt's first turns replay that many earlier commands,
      which do not count against the turns the target gets. A task that accepts the keyword
      ``routes`` is given ``routes=True`` with ``train.explore_resume`` on: later attempts may
      resume from this one (an environment records each unsolved attempt's route to its peak).
    """

    name: str

    def load_split(self, split: Split) -> list[Item]: ...

    async def rollout(self, item: Item, skill: str, backend: ModelBackend) -> Trajectory: ...


DEFAULT_MAX_TOKENS = 64


@dataclass(frozen=True)
class TaskAbilities:
    """A task's optional abilities with the defaults filled in (see ``Task``)."""

    deterministic: bool = True
    max_tokens: int = DEFAULT_MAX_TOKENS
    turns: int = 1
    """Most target calls one rollout makes: a multi-turn task's ``max_steps`` (an episode, a
    tool-calling loop), else 1; the preflight estimate counts calls, not rollouts."""
    judge_binder: Callable[[ModelBackend], None] | None = None
    executor_binder: Callable[[RolloutExecutor], None] | None = None
    closer: Callable[[], None] | None = None
    example_context: Callable[[Item], str] | None = None
    ready_check: Callable[[], None] | None = None
    exploration: Callable[..., Task] | None = None
    exploration_routes: bool = False
    """The task's ``exploration_task`` takes the keyword ``routes``."""

    def exploration_task(self, task: Task, replayed: int = 0, routes: bool = False) -> Task:
        """The task exploration runs: the task's ``exploration_task()`` (given ``replayed`` when
        an attempt replays commands first, and ``routes=True`` when asked and it takes it),
        else ``task`` itself."""
        if self.exploration is None:
            return task
        given: dict[str, Any] = {"routes": True} if routes and self.exploration_routes else {}
        return self.exploration(replayed, **given) if replayed else self.exploration(**given)

    def bind_judge(self, backend: ModelBackend) -> None:
        """Hand ``backend`` to the task's judge; a no-op when it has none."""
        if self.judge_binder is not None:
            self.judge_binder(backend)

    @property
    def heavy(self) -> bool:
        """The task's rollouts have a heavy part that ``hardware.executor`` may place."""
        return self.executor_binder is not None

    def bind_executor(self, executor: RolloutExecutor) -> None:
        """Hand ``executor`` to a heavy task; a no-op for the others (they ignore it)."""
        if self.executor_binder is not None:
            self.executor_binder(executor)

    def check_ready(self) -> None:
        """The task's own start check (``Task``: ``check_ready``); a no-op when it has none."""
        if self.ready_check is not None:
            self.ready_check()

    def close(self) -> None:
        """Release what the task started; a no-op for tasks that start nothing."""
        if self.closer is not None:
            self.closer()


def task_abilities(task: Task) -> TaskAbilities:
    """The optional abilities of ``task``, defaults filled: the one place they are looked up,
    so callers never probe a task with ``getattr``."""
    scorer = getattr(task, "scorer", None)
    deterministic = bool(getattr(task, "deterministic", True)) and bool(
        getattr(scorer, "deterministic", True)
    )
    binder = getattr(task, "bind_judge", None)
    executor_binder = getattr(task, "bind_executor", None)
    closer = getattr(task, "close", None)
    context = getattr(task, "example_context", None)
    ready = getattr(task, "check_ready", None)
    exploration = getattr(task, "exploration_task", None)
    return TaskAbilities(
        deterministic=deterministic,
        max_tokens=int(getattr(task, "max_tokens", DEFAULT_MAX_TOKENS)),
        turns=_turns(getattr(task, "max_steps", 1)),
        judge_binder=binder if callable(binder) else None,
        executor_binder=executor_binder if callable(executor_binder) else None,
        closer=closer if callable(closer) else None,
        example_context=context if callable(context) else None,
        ready_check=ready if callable(ready) else None,
        exploration=exploration if callable(exploration) else None,
        exploration_routes=callable(exploration) and _takes(exploration, "routes"),
    )


def _takes(function: Callable[..., Any], keyword: str) -> bool:
    """``function`` accepts ``keyword`` (False when its signature cannot be read)."""
    try:
        return keyword in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


def _turns(max_steps: object) -> int:
    """A task's ``max_steps`` as turns per rollout: 1 unless it is a whole number >= 1."""
    if isinstance(max_steps, bool) or not isinstance(max_steps, int):
        return 1
    return max(1, max_steps)


def skill_messages(skill: str, prompt: str) -> tuple[Message, ...]:
    """The target's view: the skill as system prompt (if any), then the item's prompt. A skill
    package is shown rendered (``skill.package.prompt_text``); any other skill as it is."""
    system = (Message("system", prompt_text(skill)),) if skill.strip() else ()
    return (*system, Message("user", prompt))


async def complete_item(
    item: Item,
    skill: str,
    messages: tuple[Message, ...],
    backend: ModelBackend,
    *,
    temperature: float,
    max_tokens: int,
) -> Completion | Trajectory:
    """One target call for ``item`` (``messages`` from ``skill_messages``). Systemic failures
    raise; the item's own failure (e.g. a transient error that outlived its retries) comes back
    as the item's failed trajectory (``infra_error`` set: missing data, not a zero). A prompt
    that does not fit the target's context window is the item's zero, not missing data: the
    skill (with the item's input) caused it, and a gate must see what a long skill costs."""
    request = ChatRequest(messages, temperature=temperature, max_tokens=max_tokens)
    try:
        return await backend.complete(request)
    except PromptTooLongError as exc:
        return failed_trajectory(item, skill, messages, f"{type(exc).__name__}: {exc}")
    except SystemicError:
        raise
    except SkillgradError as exc:
        error = f"{type(exc).__name__}: {exc}"
        return failed_trajectory(item, skill, messages, error, infra=True)


@dataclass(frozen=True)
class Reply:
    """The target's one reply to an item: the messages it was sent, its text and usage."""

    messages: tuple[Message, ...]
    text: str
    usage: Usage

    @property
    def conversation(self) -> tuple[Message, ...]:
        """The messages sent, then the reply."""
        return (*self.messages, Message("assistant", self.text))

    def trajectory(
        self,
        item: Item,
        skill: str,
        score: Score,
        error: str | None,
        steps: tuple[dict[str, Any], ...] = (),
    ) -> Trajectory:
        """The scored trajectory of this reply."""
        return Trajectory(
            item_id=item.id,
            skill_hash=skill_hash(skill),
            messages=self.conversation,
            output=self.text,
            score=score,
            reference=item.reference,
            usage=self.usage,
            steps=steps,
            error=error,
        )


class SingleTurnTask:
    """Base of the tasks whose rollout is one target call (``ChatTask``, ``CodeTask``): the
    skill as system prompt, then ``prompt(item)`` (``messages`` is the hook), at the class's
    ``temperature`` and ``max_tokens``."""

    temperature: float
    max_tokens: int

    def prompt(self, item: Item) -> str:
        raise NotImplementedError

    def messages(self, item: Item, skill: str) -> tuple[Message, ...]:
        return skill_messages(skill, self.prompt(item))

    async def target_reply(
        self, item: Item, skill: str, backend: ModelBackend
    ) -> Reply | Trajectory:
        """The target's reply; when the call failed, the item's failed trajectory
        (``complete_item``)."""
        messages = self.messages(item, skill)
        completion = await complete_item(
            item, skill, messages, backend, temperature=self.temperature, max_tokens=self.max_tokens
        )
        if isinstance(completion, Trajectory):
            return completion
        return Reply(messages, completion.text, completion.usage)


ERROR_CHARS = 2000  # an exception's message as kept in feedback and the trajectory


def scorer_failure(exc: Exception) -> tuple[Score, str]:
    """The verdict on a reply the scorer raised on (a ``SystemicError`` is re-raised first by
    the caller): score 0, the exception in the feedback, and the error for the trajectory.
    The reply caused it, so it is the item's data, never the run's end."""
    try:
        text = str(exc)
    except Exception:  # a message that cannot be made (e.g. an int too long to print)
        text = "(its message could not be shown)"
    if len(text) > ERROR_CHARS:
        text = f"{text[:ERROR_CHARS]}... [{len(text) - ERROR_CHARS} characters cut]"
    error = f"scorer raised {type(exc).__name__}: {text}"
    return Score(0.0, False, f"error: {error} (the reply could not be scored)"), error


ENVIRONMENT = "environment"
"""The ``source`` of an error step whose failure was the task's environment process (it could
not be built, failed its reset, died), not the target: ``infra_hint`` then points there."""


def infra_hint(results: Sequence[Trajectory]) -> str:
    """What to check when every item of a stage is missing data: the environment when each
    failure was its process's, else the target model's endpoint."""
    missing = [t for t in results if t.infra_error]
    if missing and all(
        any(s.get("type") == "error" and s.get("source") == ENVIRONMENT for s in t.steps)
        for t in missing
    ):
        return (
            "The environment failed, not the target model: check env.options.env and "
            "env_options (the error above is the environment's own), then re-run to resume."
        )
    return "Check the target model endpoint and credentials, then re-run to resume."


def failed_trajectory(
    item: Item,
    skill: str,
    messages: tuple[Message, ...],
    error: str,
    output: str = "",
    *,
    infra: bool = False,
) -> Trajectory:
    """A scored-0 trajectory for one item's failure. ``infra=True``: the failure is not the
    model's answer (the call outlived its retries, the sandbox could not start): it also goes
    to ``infra_error``, so the gate treats the item as missing data, not as a zero."""
    return Trajectory(
        item_id=item.id,
        skill_hash=skill_hash(skill),
        messages=messages,
        output=output,
        score=Score(0.0, False, f"error: {error}"),
        reference=item.reference,
        error=error,
        usage=Usage(),
        infra_error=error if infra else None,
    )


__all__ = [
    "DEFAULT_MAX_TOKENS",
    "ENVIRONMENT",
    "ERROR_CHARS",
    "SPLITS",
    "Reply",
    "SingleTurnTask",
    "Split",
    "Task",
    "TaskAbilities",
    "complete_item",
    "failed_trajectory",
    "infra_hint",
    "scorer_failure",
    "skill_messages",
    "task_abilities",
]
