"""IFBench end to end on the real embedded model (SmolLM2-135M, llama.cpp, offline): `skillgrad
eval` loads the pulled bundle, runs the target on a few prompts and scores them with the official
checkers, so a broken loader or scorer cannot land. Needs `skillgrad data pull ifbench`
(scripts/test runs it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from embedded_eval import eval_on_embedded

pytestmark = pytest.mark.slow
pytest.importorskip("llama_cpp", reason="install with: pip install 'skillgrad[local]'")


def test_skillgrad_eval_scores_ifbench_prompts_on_the_embedded_model(tmp_path: Path) -> None:
    result = eval_on_embedded(
        tmp_path,
        "ifbench",
        "{n_train: 1, n_val: 1, n_test: 4, seed: 0, max_tokens: 48}",
        "# Skill\nFollow every formatting instruction exactly.\n",
    )
    assert result["n"] == 4 and 0.0 <= result["mean_score"] <= 1.0
    for item_id, row in result["items"].items():
        assert item_id.startswith("ifbench-") and 0.0 <= row["score"] <= 1.0
        head = row["feedback"].splitlines()[0]
        assert head.startswith(("followed ", "empty reply")), row["feedback"]
        assert "- " in row["feedback"] and ":" in row["feedback"].splitlines()[1]
