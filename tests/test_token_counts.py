"""Token counts (issue 11 §6): unspaced text and CJK counted as ~1 token let a 1,190-character
edit pass ``max_edit_tokens: 80`` and made the skill length in history wrong. The target's own
tokenizer counts when it has one; the fallback is never below characters / 4."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillgrad.config import load_config
from skillgrad.runs.io import read_json
from skillgrad.session import run_training
from skillgrad.skill.document import approx_tokens
from skillgrad.train.select import select
from skillgrad.types import Edit

HERE = Path(__file__).parent


@pytest.mark.parametrize(
    "text",
    [
        "x" * 1190,
        "https://example.com/" + "a1" * 300,
        "日本語の文章はスペースなしで書かれます。" * 20,
    ],
)
def test_fallback_is_never_below_characters_over_4(text: str) -> None:
    assert approx_tokens(text) >= len(text) / 4


def test_cjk_counts_a_token_per_character() -> None:
    assert approx_tokens("日本語のテキスト") == 8


async def test_a_long_unspaced_edit_does_not_pass_max_edit_tokens() -> None:
    edit = Edit("add", "Rules", "y" * 1190)
    selection = await select([edit], 4, max_edit_tokens=80, skill="")
    assert selection.selected == []
    assert selection.dropped[0]["reason"] == "content exceeds 80 tokens"


def test_history_counts_skill_length_with_the_targets_tokenizer(tmp_path: Path) -> None:
    cfg = load_config(
        data={
            "env": {"task": "toy", "output_root": str(tmp_path), "run_name": "tok"},
            "train": {"num_epochs": 1, "batch_size": 4},
            "models": {
                "optimizer": {
                    "provider": "function",
                    "model": f"{HERE / 'fakes_e2e.py'}:FakeOptimizer",
                },
                "target": {
                    "provider": "function",
                    "model": f"{HERE / 'fakes_fences.py'}:CharTokenTarget",
                },
            },
        }
    )
    result = run_training(cfg)
    history = read_json(result.run_dir / "history.json")
    assert len(history) >= 2
    for record in history:  # the skill after each step, in the target's tokens (characters)
        version = result.run_dir / "skills" / f"skill_v{record['skill_version']:04d}.md"
        assert record["skill_tokens"] == len(version.read_text(encoding="utf-8"))
    assert history[-1]["skill_tokens"] > 0
