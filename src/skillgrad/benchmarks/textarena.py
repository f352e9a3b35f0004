"""TextArena (``env.task: textarena``): TextArena's single-player games that run offline.

``pip install 'skillgrad[env]'`` (textarena 0.7.4). ``TextArenaEnvironment`` is the
gymnasium-style adapter that runs in the environment process (the game's own reward as partial
credit, its invalid-move signal as ``info["invalid_action"]``); ``TextArenaTask`` is the task: an
``EnvironmentTask`` reading the first ``[token]`` of a reply, as TextArena's games do.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

from skillgrad.errors import ConfigError
from skillgrad.plugins import did_you_mean
from skillgrad.tasks.environment import EnvironmentTask

PACKAGE = "textarena==0.7.4"
INSTALL = f"pip install 'skillgrad[env]'  (or: pip install {PACKAGE})"
ACTION_PATTERN = r"\[[^\[\]\n]{1,80}\]"  # the first [token] anywhere in the reply

# The single-player games of textarena 0.7.4 that build and play with no network, no API key and
# no downloaded data (checked one by one: docs/environments.md). Left out: Hangman, Wordle,
# WordLadder, WordSearch (NLTK's word lists), GuessWho and TwentyQuestions (an OpenRouter judge),
# Klondike and UltimateTexasHoldem (do not import on Python 3.11), Sokoban-v0-medium (generating
# a level took over 40 s for some seeds), BabyAiText (no raw id).
VARIANTS: dict[str, tuple[str, ...]] = {
    "2048": (
        "v0", "v0-ultra-easy", "v0-mega-easy", "v0-super-easy", "v0-very-easy", "v0-easy",
        "v0-hard", "v0-very-hard", "v0-extreme", "v0-3x3", "v0-5x5", "v0-6x6", "v0-8x8",
        "v0-10x10",
    ),
    "Bandit": ("v0", "v0-hard"),
    "Blackjack": ("v0", "v0-long"),
    "Countdown": ("v0",),
    "Crosswords": ("v0", "v0-hardcore"),
    "Cryptarithm": ("v0",),
    "FifteenPuzzle": ("v0",),
    "FrozenLake": ("v0", "v0-random", "v0-hardcore"),
    "GuessTheNumber": ("v0", "v0-hardcore"),
    "LightsOut": ("v0",),
    "LogicPuzzle": ("v0", "v0-hard"),
    "Mastermind": ("v0", "v0-hard", "v0-extreme"),
    "Minesweeper": ("v0", "v0-small", "v0-medium", "v0-hard"),
    "PegJump": ("v0",),
    "RushHour": ("v0",),
    "Secretary": ("v0", "v0-long"),
    "Set": ("v0",),
    "Slitherlink": ("v0",),
    "Sokoban": ("v0",),
    "Sudoku": ("v0", "v0-very-easy", "v0-easy", "v0-medium", "v0-hard"),
    "ThreeCardMonte": ("v0",),
    "TowerOfHanoi": ("v0", "v0-medium", "v0-hard", "v0-hardcore", "v0-extreme"),
}  # fmt: skip
GAME_IDS = tuple(f"{game}-{v}" for game, variants in VARIANTS.items() for v in variants)
_REJECTED = re.compile(r"invalid move\. Reason: (.*?)(?: Please resubmit|$)", re.S)
_PLAYER_ACTION = "PLAYER_ACTION"


def _text(messages: Any) -> str:
    """The game's messages since the last look, the player's own action echo left out."""
    parts = []
    for message in messages or []:
        _sender, text, kind = message
        if getattr(kind, "name", kind) != _PLAYER_ACTION and str(text).strip():
            parts.append(str(text).strip())
    return "\n\n".join(parts)


class TextArenaEnvironment:
    """One TextArena single-player game behind gymnasium's protocol (``reset(seed=)`` ->
    ``(obs, info)``, ``step(action)`` -> 5-tuple). Built without TextArena's wrappers (its
    ``-raw`` id), so each observation is what the game said since the last step, not the whole
    history again. A reply without brackets is bracketed, as TextArena's default wrapper does.

    ``info``: ``score`` is the game's reward when it ends, before that its completion
    percentage (what the game pays at its own turn limit: an episode cut by ``max_steps`` keeps
    its partial credit); ``success`` a reward of 1; ``invalid_action`` the reason the game
    rejected the move (its ``set_invalid_move``)."""

    def __init__(self, game_id: str) -> None:
        import textarena

        self.env = textarena.make(f"{game_id}-raw")
        self.done = False

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        self.env.reset(num_players=1, seed=seed)
        self.done = False
        return _text(self.env.get_observation()[1]), {"score": self._progress()}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self.done:
            return "The game is over.", 0.0, True, False, {}
        move = action if "[" in action or "]" in action else f"[{action}]"
        errors = getattr(self.env.state, "error_count", 0)
        done, _ = self.env.step(move)
        obs = _text(self.env.get_observation()[1])
        info: dict[str, Any] = {}
        if getattr(self.env.state, "error_count", 0) > errors:
            found = _REJECTED.search(obs)
            info["invalid_action"] = found.group(1).strip() if found else True
        if not done:
            info["score"] = self._progress()
            return obs, 0.0, False, False, info
        self.done = True
        rewards, game_info = self.env.close()
        reward = float((rewards or {}).get(0, 0.0))
        ending = (game_info or {}).get(0, {})
        reason = str(ending.get("reason") or "").strip()
        if ending.get("invalid_move"):
            info["invalid_action"] = reason.removeprefix("Invalid Move: ") or True
        info |= {"score": max(0.0, min(1.0, reward)), "success": reward >= 1.0}
        # the ending first: feedback and the optimizer's view clip the last observation
        return f"Game over: {reason}\n\n{obs}".strip(), max(0.0, reward), True, False, info

    def _progress(self) -> float:
        measure = getattr(self.env, "_get_percentage_completion", None)
        try:
            value = float(measure()) if callable(measure) else 0.0
        except (TypeError, ValueError, ZeroDivisionError, AttributeError):
            value = 0.0
        return max(0.0, min(1.0, value))

    def close(self) -> None:
        self.done = True


def check_installed() -> None:
    """A located error naming the install line (exit 2 at the CLI), before any episode."""
    if importlib.util.find_spec("textarena") is None:
        raise ConfigError(
            "env.task 'textarena' needs the package textarena, which is not installed in this "
            f"Python ({INSTALL})"
        )


def game_id(game: str, variant: str) -> str:
    """TextArena's id of ``game`` in ``variant`` (``Sudoku`` + ``v0-easy``), checked against
    the games that run offline."""
    if game not in VARIANTS:
        raise ConfigError(
            f"env.options.game {game!r} is not a TextArena game that runs offline."
            f"{did_you_mean(game, list(VARIANTS))} Games: {', '.join(VARIANTS)}"
        )
    if variant not in VARIANTS[game]:
        raise ConfigError(
            f"env.options.variant {variant!r}: {game} has no such variant."
            f"{did_you_mean(variant, list(VARIANTS[game]))} Its variants: "
            f"{', '.join(VARIANTS[game])}"
        )
    return f"{game}-{variant}"


class TextArenaTask(EnvironmentTask):
    """``env.task: textarena``; options ``game`` (a key of ``VARIANTS``), ``variant`` (its
    difficulty: ``v0``, ``v0-easy`` ...), ``max_steps``, ``n_train`` / ``n_val`` / ``n_test``,
    ``seed``, ``action_pattern`` (default: the first ``[token]`` in the reply). Episodes are
    TextArena's own seeds, drawn from disjoint ranges per split (``EnvironmentTask``)."""

    name = "textarena"
    install_hint = f"Install it: {INSTALL}"

    def __init__(
        self,
        game: str = "TowerOfHanoi",
        variant: str = "v0",
        max_steps: int = 16,
        n_train: int = 20,
        n_val: int = 20,
        n_test: int = 20,
        seed: int = 0,
        max_tokens: int = 64,
        step_timeout: float = 30.0,
        max_observation_chars: int = 3000,
        action_pattern: str | None = ACTION_PATTERN,
        base_dir: Path | None = None,
    ) -> None:
        self.game_id = game_id(game, variant)
        check_installed()
        super().__init__(
            env="skillgrad.benchmarks.textarena:TextArenaEnvironment",
            env_options={"game_id": self.game_id},
            n_train=n_train,
            n_val=n_val,
            n_test=n_test,
            seed=seed,
            max_steps=max_steps,
            max_tokens=max_tokens,
            step_timeout=step_timeout,
            max_observation_chars=max_observation_chars,
            action_pattern=action_pattern,
            base_dir=base_dir,
        )

    def item_id(self, split: Any, index: int, seed: int) -> str:
        return f"{self.game_id}-{split}-{seed}"


__all__ = [
    "ACTION_PATTERN",
    "GAME_IDS",
    "VARIANTS",
    "TextArenaEnvironment",
    "TextArenaTask",
    "check_installed",
    "game_id",
]
