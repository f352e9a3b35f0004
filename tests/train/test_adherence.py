"""Say what the target ignores: per rule, how often train trajectories break it when it applies,
judged by one optimizer call per step, shown in the report and fed to revise mode."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from skillgrad.config import load_config
from skillgrad.runs.io import read_json
from skillgrad.session import run_training
from skillgrad.testing import (
    FunctionBackend,
    optimizer_call_kind,
    rules_reply,
    system_text,
    user_text,
)
from skillgrad.train.adherence import AdherenceOutput, RuleAdherence, rule_rows
from skillgrad.types import ChatRequest

IGNORED = "Answer with the word in capital letters."
FOLLOWED = "Answer with the word in UPPERCASE, every letter."
NEW = "Keep the reply on one line."


def _optimizer(request: ChatRequest) -> Any:
    kind, prompt = optimizer_call_kind(request), user_text(request)
    if kind == "adherence":
        numbered = re.findall(r"^(\d+)\. (.*)$", prompt.split("## Tasks")[0], re.M)
        rows = [{"rule": int(n), "applies": 4, "broken": 4 if "capital" in text else 0}
                for n, text in numbered]  # fmt: skip
        return {"rules": [*rows, {"rule": 29, "applies": 3, "broken": 1}]}  # 29: no such rule
    if kind == "revise":
        shown = prompt.split("## Rules in the skill the target does not follow")[1]
        if IGNORED in shown.split("## ")[0]:
            return rules_reply(FOLLOWED, replaces=IGNORED)
        return rules_reply("")
    if kind in ("reflect", "deep_reflect"):
        return rules_reply(NEW)
    raise AssertionError(f"unexpected optimizer call {kind}")


def _target(request: ChatRequest) -> str:
    word = user_text(request).removeprefix("Word: ").strip()
    return word.upper() if "UPPERCASE" in system_text(request) else word


def _run(tmp_path: Path, mode: str) -> tuple[Any, FunctionBackend]:
    init = tmp_path / f"init-{mode}.md"
    init.write_text(f"- {IGNORED}\n")
    off = ("semantic_merge", "rank_with_optimizer", "use_slow_update", "use_meta_skill")
    train: dict[str, Any] = {"num_epochs": 1, "batch_size": 4, "steps_per_epoch": 2,
                             "learning_rate": 2, "min_learning_rate": 1, "init_skill": str(init),
                             "adherence": mode, "stop_at_ceiling": False}  # fmt: skip
    train.update(dict.fromkeys(off, False))
    cfg = load_config(
        data={"env": {"task": "toy", "output_root": str(tmp_path), "run_name": mode},
              "train": train}
    )  # fmt: skip
    optimizer = FunctionBackend(_optimizer)
    return run_training(cfg, optimizer=optimizer, target=FunctionBackend(_target)), optimizer


def test_the_rule_the_target_ignores_is_named_and_revised(tmp_path: Path) -> None:
    result, optimizer = _run(tmp_path, "on")
    kinds = [optimizer_call_kind(r) for r in optimizer.calls]
    assert kinds.count("adherence") == 2  # one call per step
    first = read_json(result.run_dir / "steps/step_0001/adherence.json")
    assert first["rows"] == [{"rule": f"- {IGNORED}", "applies": 4, "broken": 4}]
    # the train trajectories were shown, with the skill's own rule numbered
    prompt = user_text(next(r for r in optimizer.calls if optimizer_call_kind(r) == "adherence"))
    assert f"1. {IGNORED}" in prompt and "train-" in prompt
    # revise mode was sent the ignored rule (no proposal repeated it) and rewrote it
    revise = user_text(next(r for r in optimizer.calls if optimizer_call_kind(r) == "revise"))
    assert IGNORED in revise.split("does not follow")[1].split("## ")[0]
    best = (result.run_dir / "best_skill.md").read_text()
    assert FOLLOWED in best and IGNORED not in best
    rows = {r["rule"]: r for r in result.summary["adherence"]}
    assert rows[f"- {IGNORED}"]["broken"] == 4 and not rows[f"- {IGNORED}"]["in_best"]
    report = (result.run_dir / "report.md").read_text()
    assert "## What the target ignores" in report
    assert f"| {IGNORED} | 4 | 4 | 1 | no |" in report


def test_adherence_off_makes_no_call_and_adds_nothing(tmp_path: Path) -> None:
    result, optimizer = _run(tmp_path, "off")
    assert "adherence" not in [optimizer_call_kind(r) for r in optimizer.calls]
    assert "adherence" not in result.summary
    assert "What the target ignores" not in (result.run_dir / "report.md").read_text()


def test_a_reply_is_bounded_to_the_rules_and_tasks_shown() -> None:
    reply = AdherenceOutput(rules=[RuleAdherence(rule=1, applies=8, broken=8),
                                   RuleAdherence(rule=1, applies=0, broken=0),
                                   RuleAdherence(rule=3, applies=2, broken=5),
                                   RuleAdherence(rule=4, applies=1, broken=1)])  # fmt: skip
    rows = rule_rows(reply, ["- a", "- b", "- c"], shown=4)
    assert rows == [{"rule": "- a", "applies": 4, "broken": 4},
                    {"rule": "- c", "applies": 2, "broken": 2}]  # fmt: skip
