"""Every line earns its place: after the gate, new lines no fixed item depends on are dropped."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from skillgrad.callbacks import Control
from skillgrad.config import load_config
from skillgrad.runs.io import read_json, read_jsonl
from skillgrad.session import run_training
from skillgrad.testing import (
    FunctionBackend,
    optimizer_call_kind,
    rules_reply,
    system_text,
    user_text,
)
from skillgrad.train.prune import REASON, added_lines
from skillgrad.types import ChatRequest

GOOD = "Always answer with the word in UPPERCASE."
RIDER = "Stay calm and focused."  # changes nothing for the fake target
SECOND = "Answer with the word only."


def _optimizer(request: ChatRequest) -> Any:
    kind = optimizer_call_kind(request)
    if kind == "merge":
        n = len(re.findall(r"^\[\d+\]", user_text(request), re.M))
        return {"groups": [[i] for i in range(n)]}
    if kind == "rank":
        return {"order": [0, 1, 2, 3]}
    return rules_reply(RIDER, GOOD) if GOOD not in user_text(request) else rules_reply(SECOND)


def _target(request: ChatRequest) -> str:
    word = user_text(request).removeprefix("Word: ").strip()
    return word.upper() if "UPPERCASE" in system_text(request) else word


def _cfg(tmp_path: Path, name: str, **train: Any) -> Any:
    base = {"num_epochs": 1, "batch_size": 4, "steps_per_epoch": 2, "learning_rate": 2,
            "min_learning_rate": 1, "use_slow_update": False, "use_meta_skill": False,
            "stop_at_ceiling": False}  # fmt: skip
    return load_config(
        data={
            "env": {"task": "toy", "output_root": str(tmp_path), "run_name": name},
            "train": {**base, **train},
        }
    )


def _run(tmp_path: Path, name: str, **train: Any) -> Any:
    return run_training(_cfg(tmp_path, name, **train), optimizer=FunctionBackend(_optimizer),
                        target=FunctionBackend(_target))  # fmt: skip


def test_a_line_no_fixed_item_needs_is_dropped_before_the_commit(tmp_path: Path) -> None:
    result = _run(tmp_path, "run")
    run = result.run_dir
    first = read_json(run / "history.json")[0]
    assert first["accepted"] and first["pruned"] == [f"- {RIDER}"]
    assert RIDER in (run / "steps/step_0001/candidate.md").read_text()
    committed = (run / "skills/skill_v0001.md").read_text()
    assert GOOD in committed and RIDER not in committed
    best = (run / "best_skill.md").read_text()
    assert RIDER not in best and GOOD in best
    prune = read_json(run / "steps/step_0001/prune.json")
    assert prune["removed"] == [f"- {RIDER}"] and prune["fixed"]
    assert all(v == 1.0 for t in prune["trials"] if t["removed"] for v in t["scores"].values())
    log = read_jsonl(run / "patch_log.jsonl")
    pruned = [r for r in log if r["source"] == "prune"]
    assert [r["edit"]["anchor"] for r in pruned] == [f"- {RIDER}"] and pruned[0]["match"] == REASON
    report = (run / "report.md").read_text()
    assert "Lines removed after the gate" in report and RIDER in report
    assert first["prune_kept"] == []  # the one new line left is never tried
    # off: the rider stays
    off = _run(tmp_path, "off", prune="off")
    assert RIDER in (off.run_dir / "best_skill.md").read_text()


def test_a_line_only_a_check_target_needs_stays(tmp_path: Path) -> None:
    """The main target needs only GOOD; a check target answers right only when the skill holds
    RIDER: the prune asks it too, so the committed skill is the one the check target approved."""
    fakes = Path(__file__).parents[1] / "fakes_e2e.py"
    check = {"provider": "function", "model": f"{fakes}:FakeCheckTarget",
             "options": {"needs": RIDER}}  # fmt: skip
    result = _run(tmp_path, "checked", check_targets=[check])
    run = result.run_dir
    first = read_json(run / "history.json")[0]
    assert first["accepted"] and first["pruned"] == []
    best = (run / "best_skill.md").read_text()
    assert RIDER in best and GOOD in best
    [rider, good] = read_json(run / "steps/step_0001/prune.json")["trials"]
    name = f"function:fake-check-needs-{RIDER}-0"
    assert rider["line"] == f"- {RIDER}" and rider["removed"] is False
    assert set(rider["scores"].values()) == {1.0}  # the main target holds without it ...
    assert set(rider["check_targets"][name].values()) == {0.0}  # ... the check target does not
    assert good["removed"] is False and "check_targets" not in good  # main first: it fails
    assert result.summary["check_targets"]["targets"][0]["test_best"] == 1.0
    # each kept line names the target that needs it, in the history and the report
    fixed = len(read_json(run / "steps/step_0001/prune.json")["fixed"])
    assert first["prune_kept"] == [
        {"line": f"- {RIDER}", "target": name, "lowered": len(rider["check_targets"][name]),
         "fixed": len(rider["check_targets"][name]), "check_target": True},
        {"line": f"- {GOOD}", "target": result.summary["target_model"], "lowered": fixed,
         "fixed": fixed, "check_target": False},
    ]  # fmt: skip
    report = (run / "report.md").read_text()
    assert "## Lines kept after the gate, and the target that needs each" in report
    assert (
        f"- step 1: `- {RIDER}` — {name} (check target): {len(rider['check_targets'][name])} of "
        f"the {len(rider['check_targets'][name])} val items it fixed there score lower without it"
    ) in report


class _StopAfterFirstStep:
    def on_event(self, record: dict[str, Any], control: Control) -> None:
        if record.get("event") == "step_end":
            control.request_stop("test: interrupted after step 1")


def test_a_resumed_run_prunes_exactly_as_an_uninterrupted_one(tmp_path: Path) -> None:
    whole = _run(tmp_path, "whole")
    cfg = _cfg(tmp_path, "parts")
    target = FunctionBackend(_target)
    run_training(cfg, optimizer=FunctionBackend(_optimizer), target=target,
                 callbacks=[_StopAfterFirstStep()])  # fmt: skip
    again = FunctionBackend(_target)
    resumed = run_training(cfg, optimizer=FunctionBackend(_optimizer), target=again)
    same = ("best_skill.md", "skills/skill_v0001.md", "steps/step_0001/prune.json")
    for name in same:
        assert (whole.run_dir / name).read_text() == (resumed.run_dir / name).read_text(), name
    assert resumed.summary["val_best"] == whole.summary["val_best"]


def test_only_pure_additions_are_candidates_for_removal() -> None:
    old = "# Rules\n\n- Keep it short.\n"
    assert added_lines(old, "# Rules\n\n- Keep it short.\n- New rule.\n\n## Added\n") == [3]
    # a rewritten line is not an addition: removing it would delete the line it replaced
    assert added_lines(old, "# Rules\n\n- Keep it very short.\n") == []
    # the command-forms line is built by code from solved episodes, like a worked example
    forms = "- Commands that solved earlier episodes, exactly as typed: `read book`, `take <x>`"
    assert added_lines(old, f"# Rules\n\n- Keep it short.\n{forms}\n- New rule.\n") == [4]
