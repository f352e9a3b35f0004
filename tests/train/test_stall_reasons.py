"""A stall names the reason for every dropped rule: counted by cause, one example each."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from fakes_e2e import RULES_ONLY
from skillgrad.config import load_config
from skillgrad.runs.io import read_json
from skillgrad.session import run_training
from skillgrad.testing import FunctionBackend, optimizer_call_kind, rules_reply, user_text
from skillgrad.types import ChatRequest

KNOWN = "Answer with the word only."
SKILL = f"# Rules\n\n- {KNOWN}\n"


def _optimizer(request: ChatRequest) -> Any:
    kind = optimizer_call_kind(request)
    if kind == "merge":
        n = len(re.findall(r"^\[\d+\]", user_text(request), re.M))
        return {"groups": [[i] for i in range(n)]}
    if kind == "rank":
        return {"order": [0, 1, 2, 3]}
    # four phrasings of one rule the skill holds, and one too long to fit the edit budget
    return rules_reply(KNOWN, "answer with the word only!", "Answer with the word only",
                       "Reply " + "with great care and " * 40 + "attention.")  # fmt: skip


def test_a_stall_counts_every_dropped_rule_under_its_cause(tmp_path: Path) -> None:
    init = tmp_path / "skill.md"
    init.write_text(SKILL)
    cfg = load_config(
        data={
            "env": {"task": "toy", "output_root": str(tmp_path), "run_name": "run"},
            "train": {"num_epochs": 1, "batch_size": 4, "steps_per_epoch": 1,
                      "minibatch_size": 2, "init_skill": str(init), "max_edit_tokens": 40,
                      "use_slow_update": False, "use_meta_skill": False, **RULES_ONLY},
        }
    )  # fmt: skip
    target = FunctionBackend(lambda r: "nope", "function:wrong-target")
    run = run_training(cfg, optimizer=FunctionBackend(_optimizer, "f:opt"), target=target)
    record = read_json(run.run_dir / "history.json")[0]
    reason = record["stall_reason"]
    proposed = record["n_proposed"]
    assert proposed >= 8 and reason.startswith(f"all {proposed} proposed rules dropped: ")
    counts = [int(n) for n in re.findall(r"(?:: |, )(\d+) ", reason)]
    assert sum(counts) == proposed, reason  # every rule is accounted for
    assert "merged into an equivalent proposed rule" in reason
    assert "already in the skill (e.g. 'Answer with the word only.')" in reason
    assert "content exceeds 40 tokens (e.g. 'Reply with great care" in reason
