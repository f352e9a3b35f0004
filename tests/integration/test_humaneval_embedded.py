"""HumanEval end to end on the real embedded model (SmolLM2-135M, llama.cpp, offline): `skillgrad
eval` loads the pulled `humaneval` bundle, the target writes code for two problems, and each
solution runs against the problem's own `check` in the bubblewrap box, so a broken loader,
extractor or box cannot land. Needs `skillgrad data pull humaneval` (scripts/test runs it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from embedded_eval import eval_on_embedded

pytestmark = pytest.mark.slow
pytest.importorskip("llama_cpp", reason="install with: pip install 'skillgrad[local]'")


def test_skillgrad_eval_runs_humaneval_solutions_in_the_box(tmp_path: Path) -> None:
    result = eval_on_embedded(
        tmp_path,
        "humaneval",
        "{n_train: 1, n_val: 1, n_test: 2, seed: 0, max_tokens: 160}",
        "Reply with the whole Python function in one code block.\n",
    )
    assert result["n"] == 2 and 0.0 <= result["mean_score"] <= 1.0
    for item_id, row in result["items"].items():
        assert item_id.startswith("HumanEval/"), item_id
        assert 0.0 <= row["score"] <= 1.0
        # the box ran the problem's own check(): "k/n tests passed", n > 0
        ran = re.search(r"(\d+)/(\d+) tests passed", row["feedback"])
        assert ran and int(ran.group(2)) > 0, row["feedback"]
        assert row["score"] == pytest.approx(int(ran.group(1)) / int(ran.group(2)))
