"""TextWorldExpress (``env.task: textworld_express``): 8 procedurally generated text games.

``pip install 'skillgrad[env]'`` (textworld-express: the jar and the games are in the wheel)
and a Java runtime (Debian: ``apt-get install default-jre-headless``); offline. Splits use the
games' own folds (train -> train, val -> dev, test -> test), so they are disjoint by
construction. ``TwxEnvironment`` is the gymnasium-style adapter that runs in the environment
process; ``TextWorldExpressTask`` is the task (an ``EnvironmentTask`` with the folds).
"""

from __future__ import annotations

import importlib.util
import random
import shutil
from pathlib import Path
from typing import Any

from skillgrad.errors import ConfigError
from skillgrad.plugins import did_you_mean
from skillgrad.tasks.base import Split
from skillgrad.tasks.environment import ActionMode, EnvironmentTask

GAMES = (
    "cookingworld",
    "twc",
    "coin",
    "mapreader",
    "arithmetic",
    "sorting",
    "simonsays",
    "peckingorder",
)
# each game's difficulty options, as textworld-express 1.1.0 names them (its own error lists them)
_ROOMS = ("numLocations", "includeDoors", "limitInventorySize")
PARAMS: dict[str, tuple[str, ...]] = {
    "cookingworld": (*_ROOMS, "numIngredients", "numDistractorItems"),
    "twc": (*_ROOMS, "numItemsToPutAway"),
    "coin": (*_ROOMS, "numDistractorItems"),
    "mapreader": (*_ROOMS, "maxDistanceApart", "maxDistractorItemsPerLocation"),
    "arithmetic": (),
    "sorting": (),
    "simonsays": ("gameLength", "numDistractors", "memorization", "verbose"),
    "peckingorder": (),
}
FOLDS: dict[str, str] = {"train": "train", "val": "dev", "test": "test"}
FOLD_SIZE = 1000  # seeds per fold in textworld-express 1.1.0
INSTALL_PACKAGE = "pip install 'skillgrad[env]'  (or: pip install textworld-express==1.1.0)"
INSTALL_JAVA = "apt-get install default-jre-headless  (any Java runtime >= 11 on PATH)"


def params_text(params: dict[str, Any] | str | None) -> str:
    """TextWorldExpress's ``gameParams`` string (``numLocations=3,includeDoors=0``)."""
    if params is None or isinstance(params, str):
        return params or ""
    return ",".join(f"{k}={int(v) if isinstance(v, bool) else v}" for k, v in params.items())


class TwxEnvironment:
    """One TextWorldExpress game behind gymnasium's protocol (``reset(seed=, options=)``,
    ``step(action)`` -> 5-tuple). ``seed`` indexes the fold's seeds; ``options``: ``fold``
    (train / dev / test) and ``gold`` (generate the gold action sequence)."""

    def __init__(self, game: str, params: dict[str, Any] | str | None = None) -> None:
        from textworld_express import TextWorldExpressEnv

        self.env = TextWorldExpressEnv(envStepLimit=1000)
        self.env.load(game, params_text(params))
        self.seeds: dict[str, list[int]] = {}
        self.info: dict[str, Any] = {}

    def _fold_seeds(self, fold: str) -> list[int]:
        if fold not in self.seeds:
            getter = {
                "train": self.env.getValidSeedsTrain,
                "dev": self.env.getValidSeedsDev,
                "test": self.env.getValidSeedsTest,
            }[fold]
            self.seeds[fold] = list(getter())
        return self.seeds[fold]

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        options = options or {}
        fold = str(options.get("fold", "train"))
        seeds = self._fold_seeds(fold)
        gold = bool(options.get("gold", False))
        obs, infos = self.env.reset(
            seed=seeds[(seed or 0) % len(seeds)], gameFold=fold, generateGoldPath=gold
        )
        info = self._info(infos)
        if gold:
            info["gold_actions"] = list(self.env.getGoldActionSequence())
        return obs, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        obs, reward, done, infos = self.env.step(action)
        return obs, float(reward), bool(done), False, self._info(infos)

    @staticmethod
    def _info(infos: dict[str, Any]) -> dict[str, Any]:
        return {
            "valid_actions": list(infos.get("validActions") or []),
            "task": infos.get("taskDescription", ""),
            "score": float(infos.get("score", 0.0)),
            "success": bool(infos.get("tasksuccess", False)),
        }

    def close(self) -> None:
        self.env.close()


def check_installed() -> None:
    """A located error naming what is missing (exit 2 at the CLI), before any episode."""
    if importlib.util.find_spec("textworld_express") is None:
        raise ConfigError(
            "env.task 'textworld_express' needs the package textworld-express, which is not "
            f"installed in this Python ({INSTALL_PACKAGE})"
        )
    if shutil.which("java") is None:
        raise ConfigError(
            f"env.task 'textworld_express' needs a Java runtime: no 'java' on PATH ({INSTALL_JAVA})"
        )


def check_params(game: str, params: dict[str, Any] | str | None) -> None:
    """Unknown difficulty options are a config error, before any episode."""
    names = list(params) if isinstance(params, dict) else []
    if isinstance(params, str):
        names = [p.split("=")[0].strip() for p in params.split(",") if p.strip()]
    known = PARAMS[game]
    for name in names:
        if name not in known:
            hint = did_you_mean(name, list(known))
            raise ConfigError(
                f"env.options.params: {game} has no option {name!r}.{hint}"
                f" Its options: {', '.join(known) or '(none)'}"
            )


class TextWorldExpressTask(EnvironmentTask):
    """``env.task: textworld_express``; options ``game`` (one of ``GAMES``), ``params`` (the
    game's difficulty options, e.g. ``{numLocations: 3}``), ``actions: free | listed``,
    ``max_steps``, ``n_train`` / ``n_val`` / ``n_test``, ``seed`` (which fold episodes),
    ``use_gold`` (false: no gold action sequence is generated or read)."""

    name = "textworld_express"

    def __init__(
        self,
        game: str = "peckingorder",
        params: dict[str, Any] | str | None = None,
        actions: ActionMode = "free",
        max_steps: int = 12,
        n_train: int = 20,
        n_val: int = 20,
        n_test: int = 20,
        seed: int = 0,
        max_tokens: int = 40,
        step_timeout: float = 30.0,
        max_observation_chars: int = 1500,
        use_gold: bool = True,
        base_dir: Path | None = None,
    ) -> None:
        if game not in GAMES:
            hint = did_you_mean(game, list(GAMES))
            raise ConfigError(
                f"env.options.game {game!r} is not a TextWorldExpress game.{hint} "
                f"Games: {', '.join(GAMES)}"
            )
        check_params(game, params)
        for split, n in (("n_train", n_train), ("n_val", n_val), ("n_test", n_test)):
            if not 0 <= n <= FOLD_SIZE:
                raise ConfigError(f"env.options.{split} must be within 0..{FOLD_SIZE}; got {n}")
        check_installed()
        super().__init__(
            env="skillgrad.benchmarks.textworld_express:TwxEnvironment",
            env_options={"game": game, "params": params_text(params)},
            n_train=n_train,
            n_val=n_val,
            n_test=n_test,
            seed=seed,
            actions=actions,
            max_steps=max_steps,
            max_tokens=max_tokens,
            step_timeout=step_timeout,
            max_observation_chars=max_observation_chars,
            use_gold=use_gold,
            base_dir=base_dir,
        )
        self.game = game

    def episode(self, split: Split, index: int) -> tuple[int, dict[str, Any]]:
        """The ``index``-th of ``n`` distinct fold seeds drawn with ``seed``."""
        picks = random.Random(f"{self.seed}:{split}").sample(range(FOLD_SIZE), self.sizes[split])
        gold = split == "train" and self.use_gold  # the game never computes it otherwise
        return picks[index], {"fold": FOLDS[split], "gold": gold}

    def item_id(self, split: Split, index: int, seed: int) -> str:
        return f"{self.game}-{FOLDS[split]}-{seed}"


__all__ = [
    "FOLDS",
    "GAMES",
    "PARAMS",
    "TextWorldExpressTask",
    "TwxEnvironment",
    "check_installed",
    "check_params",
]
