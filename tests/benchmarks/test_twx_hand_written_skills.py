"""The hand-written TextWorldExpress skills (docs/hand-written-skills/twx-<game>.md) against the
real games, on TRAIN-fold episodes only (no model): every command form a skill names is one the
game accepts, every command of the gold sequences has a form in the skill, and each config's
``max_steps`` covers the (shortest) gold sequence of each of its train episodes."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from skillgrad.benchmarks.textworld_express import TextWorldExpressTask, TwxEnvironment
from skillgrad.config import load_config

pytest.importorskip("textworld_express", reason="install with: pip install 'skillgrad[env]'")
if shutil.which("java") is None:  # scripts/test installs it: a missing JVM must not pass quietly
    raise RuntimeError(
        "TextWorldExpress tests need a Java runtime: apt-get install default-jre-headless"
    )

ROOT = Path(__file__).resolve().parents[2]
SHORT = ("cooking", "twc", "coin", "mapreader", "arithmetic", "sorting", "simonsays", "peck")
EPISODES = 50  # train-fold episodes per game (the skills were written from these)
GENERATIONS = 40  # Coin Collector's gold sequence is a random search: new at every reset
# (the shortest of 5 was above max_steps for one of 50 episodes in one CI run of several)
UNKNOWN = "Unknown action"
# gold sequences open with it, but it only repeats the first observation (twx-peck.md omits it)
REPEATS_THE_ROOM = "look around"


def command_forms(skill: str) -> list[str]:
    """The command forms a skill names: the backticked spans of each bullet of its
    ``## Commands ...`` section, before the bullet's explanation (its first ``:``)."""
    body = re.split(r"^## Commands.*$", skill, maxsplit=1, flags=re.MULTILINE)[1]
    body = re.split(r"^## ", body, maxsplit=1, flags=re.MULTILINE)[0]
    forms = []
    for line in body.splitlines():
        if not line.startswith("- `"):
            continue
        head = re.sub(r"`[^`]*`", lambda m: m.group(0).replace(":", " "), line).split(":")[0]
        forms += re.findall(r"`([^`]+)`", line[: len(head)])
    return forms


def form_pattern(form: str) -> re.Pattern[str]:
    """``take <object>`` -> ``^take (.+)$``: a placeholder stands for any name."""
    parts = re.split(r"<[^>]+>", form)
    return re.compile("^" + "(.+)".join(re.escape(p) for p in parts) + "$")


def test_command_forms_are_read_from_the_commands_section_only() -> None:
    skill = (
        "# T\n## Commands the game accepts\n- `move <direction>`: one of `north`, `south`\n"
        "- `slice <x>`, `dice <x>`: with `knife`\n- plain text\n## Loop\n- `not a form`\n"
    )
    assert command_forms(skill) == ["move <direction>", "slice <x>", "dice <x>"]
    assert form_pattern("put <a> in <b>").match("put 5ml of oil in box")
    assert not form_pattern("take coin").match("take the coin")


@dataclass
class Seen:
    """Along the gold paths: the gold sequence of each episode (by fold seed index) and each
    valid action's first sighting (seed index, gold prefix length)."""

    gold: dict[int, list[str]]
    valid: dict[str, tuple[int, int]]


def play_gold(env: TwxEnvironment, task: TextWorldExpressTask) -> Seen:
    seen = Seen({}, {})
    for index in range(EPISODES):
        seed, options = task.episode("train", index)
        assert options["fold"] == "train"  # the skills are written from, and checked on, train
        _, info = env.reset(seed=seed, options={**options, "gold": True})
        gold = list(info["gold_actions"])
        for k, action in enumerate(gold):
            for valid in info["valid_actions"]:
                seen.valid.setdefault(valid, (seed, k))
            _, _, _, _, info = env.step(action)
        assert info["success"], (seed, gold)
        seen.gold[seed] = gold
    return seen


def shortest_gold(env: TwxEnvironment, seed: int, enough: int) -> int:
    """The length of the first of up to ``GENERATIONS`` gold sequences of one episode that is
    ``enough`` or shorter, else the shortest (a game whose gold is fixed: its one length; Coin
    Collector's is a random walk through the rooms, up to ~25 commands, so a solution within
    ``enough`` exists when one walk is that short)."""
    lengths = []
    for _ in range(GENERATIONS):
        _, info = env.reset(seed=seed, options={"fold": "train", "gold": True})
        lengths.append(len(info["gold_actions"]))
        if lengths[-1] <= enough:
            break
    return min(lengths)


def accepted(env: TwxEnvironment, seen: Seen, command: str) -> str:
    """The game's reply to ``command`` where it was first a valid action (gold prefix replayed)."""
    seed, k = seen.valid[command]
    env.reset(seed=seed, options={"fold": "train"})
    for action in seen.gold[seed][:k]:
        env.step(action)
    obs, *_ = env.step(command)
    return obs


def game_setup(short: str) -> tuple[dict[str, Any], list[str]]:
    cfg = load_config(ROOT / "configs" / f"twx-{short}.yaml")
    skill = (ROOT / "docs" / "hand-written-skills" / f"twx-{short}.md").read_text("utf-8")
    return dict(cfg.env.options), command_forms(skill)


@pytest.mark.parametrize("short", SHORT)
def test_a_hand_written_skill_names_only_accepted_commands_and_covers_the_gold(
    short: str,
) -> None:
    options, forms = game_setup(short)
    assert forms, f"twx-{short}.md names no command forms"
    game, params = options["game"], options.get("params")
    task = TextWorldExpressTask(game=game, params=params, n_train=EPISODES, seed=0)
    env = TwxEnvironment(game, params)
    try:
        seen = play_gold(env, task)
        longest = max(shortest_gold(env, seed, options["max_steps"]) for seed in seen.gold)
        assert longest <= options["max_steps"], (short, longest)
        patterns = [form_pattern(f) for f in forms]
        gold = {a for g in seen.gold.values() for a in g} - {REPEATS_THE_ROOM}
        uncovered = {a for a in gold if not any(p.match(a) for p in patterns)}
        assert not uncovered, f"gold commands with no form in twx-{short}.md: {uncovered}"
        for form, pattern in zip(forms, patterns, strict=True):
            instance = next((v for v in seen.valid if pattern.match(v)), None)
            assert instance is not None, f"{form!r} (twx-{short}.md) is never a valid action"
            reply = accepted(env, seen, instance)
            assert UNKNOWN not in reply, (form, instance, reply)
    finally:
        env.close()
