"""``EnvironmentTask``: the target acts in a multi-turn environment (gymnasium's protocol).

The skill is the system prompt, each observation a user turn, each reply one action (its first
line, cleaned and bounded), until the episode ends or ``max_steps``. An item is one episode: a
reset seed (and reset options). The score is the environment's, normalised to [0, 1] (partial
credit where the game gives it); the feedback says what happened. Environments run in their own
processes (``tasks/env_pool.py``): a crash or hang is the item's ``infra_error``, not a zero.
Gold action sequences are kept for train episodes only (the optimizer's hidden reference), and
never read with ``use_gold: false`` (a run measured without any expert trajectory).
"""

from __future__ import annotations

import asyncio
import copy
import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from skillgrad.errors import ConfigError, SkillgradError, SystemicError
from skillgrad.models.base import ModelBackend
from skillgrad.prompts import render_prompt
from skillgrad.skill import skill_hash
from skillgrad.skill.package import prompt_text
from skillgrad.tasks.base import SPLITS, Split
from skillgrad.tasks.env_pool import EnvFailure, EnvPool, EnvProcess, EnvSpec
from skillgrad.tasks.episode import MAX_DEMO_ACTIONS, episode_feedback
from skillgrad.types import ChatRequest, Item, Message, Score, Trajectory, Usage

ActionMode = Literal["free", "listed"]
SPLIT_BASE = {"train": 0, "val": 1_000_000, "test": 2_000_000}  # disjoint seed ranges
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


def parse_action(reply: str, limit: int = 120) -> str:
    """The action in a reply: its first line with text, list marks, quotes and an
    ``Action:`` label stripped, a final period dropped, at most ``limit`` characters."""
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

    name = "environment"
    deterministic = True
    temperature = 0.0

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
        use_gold: bool = True,
        base_dir: Path | None = None,
    ) -> None:
        if actions not in ("free", "listed"):
            raise ConfigError(f"env option actions must be 'free' or 'listed'; got {actions!r}")
        if max_steps < 1 or max_reward <= 0 or step_timeout <= 0:
            raise ConfigError("env options max_steps, max_reward and step_timeout must be > 0")
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
        self.use_gold = use_gold
        self._pool: EnvPool | None = None

    # -- splits ---------------------------------------------------------------------------
    def episode(self, split: Split, index: int) -> tuple[int, dict[str, Any]]:
        """(reset seed, reset options) of episode ``index`` of ``split``; override for
        environments with their own folds."""
        rng = random.Random(f"{self.seed}:{split}:{index}")
        return SPLIT_BASE[split] + rng.randrange(1_000_000), dict(self.reset_options.get(split, {}))

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
        return EnvSpec(self.env, self.env_options, self.base_dir, self.max_chars)

    @property
    def pool(self) -> EnvPool:
        if self._pool is None:
            self._pool = EnvPool(self.spec())
        return self._pool

    def close(self) -> None:
        """Kill every environment process (the session calls this when it closes)."""
        if self._pool is not None:
            self._pool.close()

    def exploration_task(self) -> EnvironmentTask:
        """The task train-time exploration plays (``train/explore.py``): the same episodes
        with the valid actions listed each turn, on the same environment processes."""
        listed = copy.copy(self)
        listed.actions = "listed"
        listed._pool = self.pool  # one pool: the session closes it once
        return listed

    # -- one episode ----------------------------------------------------------------------
    async def rollout(self, item: Item, skill: str, backend: ModelBackend) -> Trajectory:
        process = self.pool.acquire()
        episode = _Episode(self, item, skill)
        healthy = False
        try:
            traj = await episode.run(process, backend)
            healthy = not episode.replay_broke
            return traj
        except EnvFailure as exc:
            return episode.trajectory(error=str(exc), infra=True)
        finally:  # also on cancellation (Ctrl-C): a half-played process is not reused
            self.pool.release(process, healthy)

    async def call_env(self, process: EnvProcess, message: dict[str, Any]) -> dict[str, Any]:
        return await asyncio.to_thread(process.request, message, self.step_timeout)


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


def loop_erased(actions: Sequence[str], after: Sequence[str], start: str) -> list[str]:
    """``actions`` without their detours: when the observation after a command is one the
    sequence showed before the last (``start``, or the answer to an earlier command still
    kept), the commands since then are dropped (a loop-erased walk, with observations standing
    for states). A command answered with the observation just shown (``look around`` first, as
    the games' own solutions start) is a look, not a detour: it stays. An observation can
    repeat while the hidden state moved on, so the caller replays the result and keeps it only
    when it still solves the episode."""
    kept: list[str] = []
    at = {start: 0}  # observation -> how many kept commands led to it
    for action, obs in zip(actions, after, strict=True):
        back = at.get(obs)
        if back is not None and back < len(kept):  # (back == len(kept): a look, kept)
            del kept[back:]
            at = {o: n for o, n in at.items() if n <= back}
            continue
        kept.append(action)
        at[obs] = len(kept)
    return kept


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
        self.replay_broke = False

    async def run(self, process: EnvProcess, backend: ModelBackend) -> Trajectory:
        task, data = self.task, self.item.input
        first = await task.call_env(process, reset_message(data))
        self.info = first.get("info") or {}
        # never a val/test reference; none at all with use_gold off
        if task.use_gold and self.item.meta.get("split", "train") == "train":
            self.gold = self.info.get("gold_actions")
        self.steps.append(
            {
                "type": "env_reset",
                "task": self.info.get("task", ""),
                "observation": first.get("obs", ""),
                "valid_actions": self.info.get("valid_actions"),
            }
        )
        self.messages.append(Message("user", _turn(first["obs"], self.info, task.actions, True)))
        for number in range(1, task.max_steps + 1):
            request = ChatRequest(
                tuple(self.messages), temperature=task.temperature, max_tokens=task.max_tokens
            )
            try:
                completion = await backend.complete(request)
            except SystemicError:  # the rule of every rollout (errors.py): the run stops
                raise
            except SkillgradError as exc:  # one item's model failure: missing data
                return self.trajectory(error=f"{type(exc).__name__}: {exc}", infra=True)
            self.usage = self.usage + completion.usage
            if await self.act(process, number, completion.text):
                break
        if self.gold and not self.solved():
            await self.replay_gold(process, data)
        return self.trajectory()

    async def replay_gold(self, process: EnvProcess, data: dict[str, Any]) -> None:
        """Play a failed TRAIN episode's gold sequence from the same reset and keep what the
        environment answered to each command (``env_gold``): a worked example can then show
        the observation each command answers (``train/examples.py``). A sequence that comes
        back to an observation it already showed (a search that walks back and forth) is
        replayed once more without those detours (``loop_erased``), and the shorter one becomes
        the episode's reference when it solves too. Steps take milliseconds; nothing is recorded
        when the sequence is too long or the environment does not solve it as given (a gold
        sequence that depends on chance)."""
        gold = self.gold or []
        if len(gold) > MAX_DEMO_ACTIONS:
            return
        try:
            played = await self._play(process, data, gold)
            if played is None:
                return
            short = loop_erased(gold, played[1:], played[0])
            replayed = await self._play(process, data, short) if len(short) < len(gold) else None
        except EnvFailure:  # the episode stands; only its process is not reused
            self.replay_broke = True
            return
        step: dict[str, Any] = {"type": "env_gold"}
        if replayed is not None:
            step["detours_cut"] = len(gold) - len(short)
            self.gold, played = short, replayed
        step["observations"] = [o[:GOLD_OBSERVATION_CHARS] for o in played[1:]]
        self.steps.append(step)

    async def _play(
        self, process: EnvProcess, data: dict[str, Any], actions: Sequence[str]
    ) -> list[str] | None:
        """The reset observation and the answer to each of ``actions`` played from the episode's
        reset; None when they do not solve it."""
        seen = [str((await self.task.call_env(process, reset_message(data))).get("obs", ""))]
        info: dict[str, Any] = {}
        reward = 0.0
        for action in actions:
            out = await self.task.call_env(process, {"op": "step", "action": action})
            seen.append(str(out.get("obs", "")))
            info, reward = out.get("info") or {}, reward + float(out.get("reward") or 0.0)
        return seen if outcome(info, reward, self.task.max_reward)[1] else None

    async def act(self, process: EnvProcess, number: int, reply: str) -> bool:
        """Play one reply; True when the episode is over."""
        action = parse_action(reply, self.task.max_action_chars)
        valid_before = self.info.get("valid_actions")
        cut = bool(self.info.get("valid_actions_total"))
        out = await self.task.call_env(process, {"op": "step", "action": action})
        self.info = out.get("info") or {}
        self.reward += float(out.get("reward") or 0.0)
        # a list cut to its first entries cannot say an action was not accepted: unknown
        valid, listed_as = (None, None) if cut else check_action(action, valid_before)
        step: dict[str, Any] = {
            "type": "env_step",
            "step": number,
            "reply": reply[:300],
            "action": action,
            "valid": valid,
            "valid_actions": valid_before,
            "observation": out.get("obs", ""),
            "reward": out.get("reward", 0.0),
            "score": self.score(),
        }
        if listed_as is not None:
            step["listed_as"] = listed_as
        self.steps.append(step)
        self.messages.append(Message("assistant", action))
        if out.get("terminated") or out.get("truncated"):
            self.end = "terminated" if out.get("terminated") else "truncated"
            return True
        turn = _turn(out["obs"], self.info, self.task.actions, False)
        self.messages.append(Message("user", turn))
        return False

    def score(self) -> float:
        return outcome(self.info, self.reward, self.task.max_reward)[0]

    def solved(self) -> bool:
        return outcome(self.info, self.reward, self.task.max_reward)[1]

    def trajectory(self, error: str | None = None, infra: bool = False) -> Trajectory:
        actions = [s["action"] for s in self.steps if s["type"] == "env_step"]
        if error is not None:
            self.steps.append({"type": "error", "reason": error})
            score = Score(0.0, False, f"error: {error}")
        else:
            value, passed = outcome(self.info, self.reward, self.task.max_reward)
            score = Score(value, passed, episode_feedback(self.steps, value, passed, self.end))
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
    "loop_erased",
    "parse_action",
]
