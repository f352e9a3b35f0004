"""``EnvironmentTask``: the target acts in a multi-turn environment (gymnasium's protocol).

The skill is the system prompt, each observation a user turn, each reply one action (its first
line, cleaned and bounded, or the first match of ``action_pattern``), until the episode ends or
``max_steps``. An item is one episode: a reset seed (and reset options). The score is the
environment's, normalised to [0, 1] (partial credit where the game gives it); the feedback says
what happened. Environments run in their own processes (``tasks/env_pool.py``). A ``step`` that
raises on an action or hangs ends the episode, scored as it stands (the reply caused it); a
process that cannot be built, fails its ``reset`` or dies is the item's ``infra_error`` (missing
data), not a zero. Gold action sequences are kept for train episodes only (the optimizer's hidden
reference), and never read with ``use_gold: false`` (a run measured without any expert
trajectory).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from skillgrad.errors import ConfigError, PromptTooLongError, SkillgradError, SystemicError
from skillgrad.executors import RolloutExecutor
from skillgrad.models.base import ModelBackend
from skillgrad.prompts import render_prompt
from skillgrad.skill import skill_hash
from skillgrad.skill.package import prompt_text
from skillgrad.tasks.base import ENVIRONMENT, SPLITS, Split
from skillgrad.tasks.env_actions import (
    check_action,
    compile_action_pattern,
    loop_erased,
    parse_action,
    shortcuts,
)
from skillgrad.tasks.env_options import check_options, split_seeds
from skillgrad.tasks.env_pool import (
    EnvChannel,
    EnvFailure,
    EnvOpener,
    EnvPool,
    EnvProcess,
    EnvSpec,
    EnvStepFailure,
)
from skillgrad.tasks.env_remote import env_opener
from skillgrad.tasks.episode import (
    MAX_DEMO_ACTIONS,
    EnvEnd,
    EnvGold,
    EnvReset,
    EnvRoute,
    EnvShort,
    EnvStep,
    EpisodeError,
    env_steps,
    episode_feedback,
    episode_trail,
)
from skillgrad.types import ChatRequest, Item, Message, Score, Trajectory, Usage

ActionMode = Literal["free", "listed"]
SPLIT_BASE = {"train": 0, "val": 1_000_000, "test": 2_000_000}  # disjoint seed ranges


def _turn(obs: str, info: dict[str, Any], mode: str, first: bool) -> str:
    listed = info.get("valid_actions") if mode == "listed" else None
    actions = "\n\nValid actions: " + " | ".join(listed) if listed else ""
    if not first:
        return render_prompt("environment_turn", observation=obs.strip(), actions=actions)
    task = info.get("task") or ""
    task = f"{task.strip()}\n\n" if task.strip() else ""
    return render_prompt("environment_first", task=task, observation=obs.strip(), actions=actions)


GOLD_OBSERVATION_CHARS = 600


class EnvironmentTask:
    """Episodes of any gymnasium-style environment (``env``: ``file.py:Class``,
    ``module:attr`` or a registered gymnasium id, built with ``env_options``)."""

    opener: EnvOpener = EnvProcess  # where the pool starts processes (``bind_executor``)
    name = "environment"
    deterministic = True
    temperature = 0.0
    # what a start check that cannot build the environment tells the user to run
    install_hint = (
        "Install the package that provides it into this Python (the built-in environments: "
        "pip install 'skillgrad[env]')"
    )

    def __init__(
        self,
        env: str,
        env_options: dict[str, Any] | None = None,
        n_train: int = 20,
        n_val: int = 20,
        n_test: int = 20,
        seed: int = 0,
        reset_options: dict[str, dict[str, Any]] | None = None,
        actions: ActionMode = "free",
        max_steps: int = 12,
        max_tokens: int = 40,
        max_reward: float = 1.0,
        step_timeout: float = 30.0,
        max_observation_chars: int = 1500,
        max_action_chars: int = 120,
        pass_env: Sequence[str] = (),
        use_gold: bool = True,
        base_dir: Path | None = None,
        action_pattern: str | None = None,
    ) -> None:
        self.action_pattern = compile_action_pattern(action_pattern)
        if actions not in ("free", "listed"):
            raise ConfigError(f"env option actions must be 'free' or 'listed'; got {actions!r}")
        check_options(
            {"train": n_train, "val": n_val, "test": n_test},
            {
                "seed": seed,
                "max_steps": max_steps,
                "step_timeout": step_timeout,
                "max_reward": max_reward,
                "max_tokens": max_tokens,
                "max_observation_chars": max_observation_chars,
                "max_action_chars": max_action_chars,
                "pass_env": pass_env,
            },
        )
        if not isinstance(use_gold, bool):
            raise ConfigError(f"env option use_gold must be true or false; got {use_gold!r}")
        unknown = set(reset_options or {}) - set(SPLITS)
        if unknown:
            raise ConfigError(f"reset_options has keys {sorted(unknown)}: use train, val, test")
        self.env, self.env_options = env, dict(env_options or {})
        self.sizes = {"train": n_train, "val": n_val, "test": n_test}
        self.seed, self.reset_options = seed, dict(reset_options or {})
        self.actions, self.max_steps, self.max_tokens = actions, max_steps, max_tokens
        self.max_reward, self.step_timeout = max_reward, step_timeout
        self.max_chars, self.max_action_chars = max_observation_chars, max_action_chars
        self.base_dir = str(base_dir) if base_dir is not None else None
        self.pass_env = tuple(pass_env)
        self.use_gold = use_gold
        self.replayed = 0  # an exploration attempt's first turns, replayed: no list of actions
        self.routes = False  # exploration with resume: an unsolved episode records its route
        self._pool: EnvPool | None = None
        self._seeds: dict[str, list[int]] = {}

    # -- splits ---------------------------------------------------------------------------
    def episode(self, split: Split, index: int) -> tuple[int, dict[str, Any]]:
        """(reset seed, reset options) of episode ``index`` of ``split``; override for
        environments with their own folds. The seeds of a split are distinct (``split_seeds``)."""
        if split not in self._seeds:
            self._seeds[split] = split_seeds(self.seed, split, self.sizes[split], SPLIT_BASE[split])
        return self._seeds[split][index], dict(self.reset_options.get(split, {}))

    def item_id(self, split: Split, index: int, seed: int) -> str:
        return f"{split}-{seed}"

    def load_split(self, split: Split) -> list[Item]:
        items = []
        for index in range(self.sizes[split]):
            seed, options = self.episode(split, index)
            items.append(
                Item(
                    id=self.item_id(split, index, seed),
                    input={"seed": seed, "options": options},
                    meta={"split": split},
                )
            )
        return items

    # -- processes ------------------------------------------------------------------------
    def spec(self) -> EnvSpec:
        return EnvSpec(
            self.env, self.env_options, self.base_dir, self.max_chars, pass_env=self.pass_env
        )

    def bind_executor(self, executor: RolloutExecutor) -> None:
        """``hardware.executor: ray``: each environment process lives in a Ray actor on the
        cluster (``env_remote``); the episodes, and every model call, stay here. The processes
        of another opener are closed (the local executor keeps them)."""
        opener = env_opener(executor)
        if opener is not self.opener:
            self.close()
            self._pool, self.opener = None, opener

    @property
    def pool(self) -> EnvPool:
        if self._pool is None:
            self._pool = EnvPool(self.spec(), self.opener)
        return self._pool

    def check_ready(self) -> None:
        """Build the environment once before any episode (the session does, at start): one that
        cannot be built (a missing package, an unknown game id) is one located ``ConfigError``
        naming ``install_hint``, not an infra error per episode. The process built serves the
        first episode."""
        process = self.pool.acquire()
        healthy = False
        try:
            process.start()
            healthy = True
        except EnvFailure as exc:
            raise ConfigError(
                f"env.task {self.name!r}: the environment {self.env!r} cannot be built ({exc}). "
                f"{self.install_hint}"
            ) from None
        finally:
            self.pool.release(process, healthy)

    def close(self) -> None:
        """Kill every environment process (the session calls this when it closes)."""
        if self._pool is not None:
            self._pool.close()

    def exploration_task(self, replayed: int = 0, routes: bool = False) -> EnvironmentTask:
        """The task train-time exploration plays (``train/explore.py``): the same episodes
        with the valid actions listed each turn, on the same environment processes; an attempt
        that first replays ``replayed`` earlier commands (``train.explore_resume``) has as many
        more steps, so the target still gets ``max_steps`` turns of its own, and the turns it
        replays go without their list of actions (the target reads its own commands there, and
        a list per turn took a quarter of the context window: measured on Pecking Order, every
        resumed attempt ran out of context 2 to 3 turns after its replay). With ``routes``
        (``train.explore_resume`` on), an unsolved train episode of this variant records its way
        to its highest score (``shorten_route``), which a later attempt replays."""
        listed = copy.copy(self)
        listed.actions = "listed"
        listed.max_steps = self.max_steps + replayed
        listed.replayed, listed.routes = replayed, routes
        listed._pool = self.pool  # one pool: the session closes it once
        return listed

    # -- one episode ----------------------------------------------------------------------
    async def rollout(self, item: Item, skill: str, backend: ModelBackend) -> Trajectory:
        process = self.pool.acquire()
        episode = _Episode(self, item, skill)
        healthy = False
        try:
            traj = await episode.run(process, backend)
            healthy = not episode.replay_broke and episode.failed is None
            return traj
        except EnvFailure as exc:
            return episode.trajectory(error=str(exc), infra=True, source=ENVIRONMENT)
        finally:  # also on cancellation (Ctrl-C): a half-played process is not reused
            self.pool.release(process, healthy)

    async def call_env(self, process: EnvChannel, message: dict[str, Any]) -> dict[str, Any]:
        return await process.call(message, self.step_timeout)


def reset_message(data: dict[str, Any]) -> dict[str, Any]:
    """The environment process's reset request for an episode item's input."""
    return {"op": "reset", "seed": data.get("seed"), "options": data.get("options")}


def outcome(info: dict[str, Any], reward: float, max_reward: float) -> tuple[float, bool]:
    """(score in [0, 1], solved) after a step: the info's normalised ``score`` when it has one,
    else the rewards so far over ``max_reward``; solved is the info's ``success`` when given,
    else a full score."""
    found = info.get("score")
    value = min(1.0, max(0.0, float(found) if found is not None else reward / max_reward))
    success = info.get("success")
    return value, bool(success) if success is not None else value >= 1.0 - 1e-9


class _Episode:
    """The mutable state of one episode: messages, steps, usage, the last info."""

    def __init__(self, task: EnvironmentTask, item: Item, skill: str) -> None:
        self.task, self.item, self.skill = task, item, skill
        system = prompt_text(skill)
        self.messages: list[Message] = [Message("system", system)] if system.strip() else []
        self.steps: list[dict[str, Any]] = []
        self.usage = Usage()
        self.info: dict[str, Any] = {}
        self.reward = 0.0
        self.end = "step_limit"
        self.gold: list[str] | None = None
        self.start = ""  # the reset observation
        self.replay_broke = False
        self.failed: str | None = None  # why the environment's step failed (the episode's end)

    async def run(self, process: EnvChannel, backend: ModelBackend) -> Trajectory:
        task, data = self.task, self.item.input
        first = await task.call_env(process, reset_message(data))
        self.info = first.get("info") or {}
        self.start = str(first.get("obs", ""))
        # never a val/test reference; none at all with use_gold off
        if task.use_gold and self.train:
            self.gold = self.info.get("gold_actions")
        reset = EnvReset(
            task=self.info.get("task", ""),
            observation=first.get("obs", ""),
            valid_actions=self.info.get("valid_actions"),
        )
        self.steps.append(reset.to_json())
        self.messages.append(Message("user", _turn(first["obs"], self.info, self.mode(0), True)))
        for number in range(1, task.max_steps + 1):
            request = ChatRequest(
                tuple(self.messages), temperature=task.temperature, max_tokens=task.max_tokens
            )
            try:
                completion = await backend.complete(request)
            except PromptTooLongError:  # the conversation outgrew the target's context window:
                self.end = "context_full"  # the episode ends there, scored as it stands
                break
            except SystemicError:  # the rule of every rollout (errors.py): the run stops
                raise
            except SkillgradError as exc:  # one item's model failure: missing data
                return self.trajectory(error=f"{type(exc).__name__}: {exc}", infra=True)
            self.usage = self.usage + completion.usage
            if await self.act(process, number, completion.text):
                break
        if self.gold and not self.solved():
            await self.replay_gold(process, data)
        elif self.solved() and self.failed is None and self.train:
            await self.shorten_pass(process, data)
        if task.routes and not self.solved() and self.failed is None and self.train:
            await self.shorten_route(process, data)
        return self.trajectory()

    def mode(self, played: int) -> str:
        """How the turn after ``played`` steps shows the commands: a replayed turn
        (``EnvironmentTask.replayed``) without their list."""
        return "free" if played < self.task.replayed else self.task.actions

    @property
    def train(self) -> bool:
        return self.item.meta.get("split", "train") == "train"

    async def replay_gold(self, process: EnvChannel, data: dict[str, Any]) -> None:
        """Play a failed TRAIN episode's gold sequence from the same reset and keep what the
        environment answered to each command (``env_gold``): a worked example can then show
        the observation each command answers (``train/examples.py``). A sequence that comes
        back to an observation it already showed (a search that walks back and forth) is
        replayed once more without those detours (``shortcuts``), and the shorter one becomes
        the episode's reference when it solves too. Steps take milliseconds; nothing is recorded
        when the sequence is too long or the environment does not solve it as given (a gold
        sequence that depends on chance)."""
        gold = self.gold or []
        if len(gold) > MAX_DEMO_ACTIONS:
            return
        try:
            played = await self._play(process, data, gold)
            tries = shortcuts(gold, played[1:], played[0]) if played else []
            found = await self._first_replaying(process, data, tries)
        except (EnvFailure, EnvStepFailure):  # the episode stands; its process is not reused
            self.replay_broke = True
            return
        if played is None:
            return
        detours = None
        if found is not None:
            self.gold, played = found
            detours = len(gold) - len(self.gold)
        observations = [o[:GOLD_OBSERVATION_CHARS] for o in played[1:]]
        self.steps.append(EnvGold(observations=observations, detours_cut=detours).to_json())

    async def shorten_pass(self, process: EnvChannel, data: dict[str, Any]) -> None:
        """A passing TRAIN episode that walked back and forth (the target's own search, an
        exploration attempt's above all) is replayed without its detours and repeated looks
        (``shortcuts``); when that still solves, the shorter path is recorded (``env_short``)
        and a worked example shows it, as a gold sequence's is shown without its detours."""
        played = env_steps(self.steps)
        actions = [s.action for s in played]
        if len(actions) > MAX_DEMO_ACTIONS:
            return
        tries = shortcuts(actions, [str(s.observation) for s in played], self.start)
        try:
            found = await self._first_replaying(process, data, tries)
        except (EnvFailure, EnvStepFailure):  # the episode stands; its process is not reused
            self.replay_broke = True
            return
        if found is not None:
            short, answers = found
            self.steps.append(
                EnvShort(
                    actions=short,
                    observations=[o[:GOLD_OBSERVATION_CHARS] for o in answers[1:]],
                    detours_cut=len(actions) - len(short),
                ).to_json()
            )

    async def shorten_route(self, process: EnvChannel, data: dict[str, Any]) -> None:
        """An unsolved TRAIN exploration attempt that raised its score is replayed up to its
        highest score without the commands the environment refused, then also without its
        detours (``shortcuts``); the shortest that still reaches that score is recorded
        (``env_route``), and an attempt resumed from here replays it (``train/explore.py``)."""
        played = env_steps(self.steps)
        top = max((s.progress for s in played if s.progress is not None), default=0.0)
        if top <= 0:
            return
        upto = played[: next(i for i, s in enumerate(played) if s.progress == top) + 1]
        kept = [s for s in upto if s.valid is not False]
        if len(upto) > MAX_DEMO_ACTIONS or not kept:
            return
        actions = [s.action for s in kept]
        tries = shortcuts(actions, [str(s.observation) for s in kept], self.start)
        if len(kept) < len(upto):
            tries.append(actions)
        try:
            found = await self._first_replaying(process, data, tries, score=top)
        except (EnvFailure, EnvStepFailure):  # the episode stands; its process is not reused
            self.replay_broke = True
            return
        if found is not None:
            route = found[0]
            self.steps.append(EnvRoute(route, top, len(upto) - len(route)).to_json())

    async def _first_replaying(
        self,
        process: EnvChannel,
        data: dict[str, Any],
        tries: Sequence[list[str]],
        score: float | None = None,
    ) -> tuple[list[str], list[str]] | None:
        """The first of ``tries`` (shortest first: ``shortcuts``) that, played from the
        episode's reset, still solves it (``score`` None) or reaches ``score``, with what the
        environment answered (reset first); None when none does."""
        for actions in tries:
            seen, value, solved = await self._replay(process, data, actions)
            if solved if score is None else value >= score - 1e-9:
                return actions, seen
        return None

    async def _play(
        self, process: EnvChannel, data: dict[str, Any], actions: Sequence[str]
    ) -> list[str] | None:
        """The reset observation and the answer to each of ``actions`` played from the episode's
        reset; None when they do not solve it."""
        seen, _, solved = await self._replay(process, data, actions)
        return seen if solved else None

    async def _replay(
        self, process: EnvChannel, data: dict[str, Any], actions: Sequence[str]
    ) -> tuple[list[str], float, bool]:
        """``actions`` played from the episode's reset: the reset observation and the answer to
        each, the score they reach and whether they solve it."""
        seen = [str((await self.task.call_env(process, reset_message(data))).get("obs", ""))]
        info: dict[str, Any] = {}
        reward = 0.0
        for action in actions:
            out = await self.task.call_env(process, {"op": "step", "action": action})
            seen.append(str(out.get("obs", "")))
            info, reward = out.get("info") or {}, reward + float(out.get("reward") or 0.0)
        value, solved = outcome(info, reward, self.task.max_reward)
        return seen, value, solved

    async def act(self, process: EnvChannel, number: int, reply: str) -> bool:
        """Play one reply; True when the episode is over."""
        action = parse_action(reply, self.task.max_action_chars, self.task.action_pattern)
        valid_before = self.info.get("valid_actions")
        cut = bool(self.info.get("valid_actions_total"))
        try:
            out = await self.task.call_env(process, {"op": "step", "action": action})
        except EnvStepFailure as exc:  # the reply broke the game: the episode ends, scored
            self.failed, self.end, out = str(exc), "failed", {}
        else:
            self.info = out.get("info") or {}
            self.reward += float(out.get("reward") or 0.0)
        # a list cut to its first entries cannot say an action was not accepted: unknown
        valid, listed_as = (None, None) if cut else check_action(action, valid_before)
        rejected = self.info.get("invalid_action")  # the environment's own word wins
        if rejected:
            valid = False
        step = EnvStep(
            step=number,
            reply=reply[:300],
            action=action,
            valid=valid,
            valid_actions=valid_before,
            observation=out.get("obs", ""),
            reward=out.get("reward", 0.0),
            score=self.score(),
            listed_as=listed_as,
            env_error=self.failed,
            invalid_reason=rejected if isinstance(rejected, str) else None,
        )
        self.steps.append(step.to_json())
        self.messages.append(Message("assistant", action))
        if self.failed is not None:
            return True
        if out.get("terminated") or out.get("truncated"):
            self.end = "terminated" if out.get("terminated") else "truncated"
            return True
        turn = _turn(out["obs"], self.info, self.mode(number), False)
        self.messages.append(Message("user", turn))
        return False

    def score(self) -> float:
        return outcome(self.info, self.reward, self.task.max_reward)[0]

    def solved(self) -> bool:
        return outcome(self.info, self.reward, self.task.max_reward)[1]

    def trajectory(
        self, error: str | None = None, infra: bool = False, source: str | None = None
    ) -> Trajectory:
        """The scored episode; ``error`` with ``infra``: missing data, ``source`` naming what
        failed (``"environment"``: its process, not the target)."""
        actions = [s.action for s in env_steps(self.steps)]
        if error is not None:
            self.steps.append(EpisodeError(reason=error, source=source or None).to_json())
            score = Score(0.0, False, f"error: {error}")
        else:
            value, passed = outcome(self.info, self.reward, self.task.max_reward)
            self.steps.append(EnvEnd(self.end).to_json())
            said = episode_feedback(self.steps, value, passed, self.end)
            trail = [] if passed else episode_trail(self.steps)
            score = Score(value, passed, "; ".join([said, *trail]))
            if self.failed is not None:  # the reply's doing: the item's score, with its reason
                error = f"the environment {self.failed} on the action {actions[-1]!r}"
        return Trajectory(
            item_id=self.item.id,
            skill_hash=skill_hash(self.skill),
            messages=tuple(self.messages),
            output=" | ".join(actions)[:2000],
            score=score,
            reference=self.gold,
            error=error,
            usage=self.usage,
            steps=tuple(self.steps),
            infra_error=error if infra else None,
        )


__all__ = [
    "SPLIT_BASE",
    "ActionMode",
    "EnvironmentTask",
    "check_action",
    "compile_action_pattern",
    "loop_erased",
    "parse_action",
]
