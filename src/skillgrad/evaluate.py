"""Zero-shot evaluation of any skill on a split: ``skillgrad eval``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skillgrad.config import Config
from skillgrad.models.metering import MeteredBackend
from skillgrad.registry import load_task
from skillgrad.runs.cache import CallCache
from skillgrad.skill import Skill
from skillgrad.train.api import build_raw_backend, load_splits
from skillgrad.train.rollout import mean_score, rollout


async def evaluate_skill(cfg: Config, skill_path: Path, split: str) -> dict[str, Any]:
    """Score ``skill_path`` on ``split`` with the configured target; calls cached under
    ``<output_root>/_eval/calls.sqlite`` so re-evaluating the same skill is free."""
    task = load_task(cfg.env.task, dict(cfg.env.options), Path(cfg.base_dir))
    items = load_splits(task)[split]
    skill = Skill.load(skill_path)
    store = CallCache(Path(cfg.env.output_root) / "_eval" / "calls.sqlite")
    try:
        target = MeteredBackend(
            build_raw_backend(cfg.models.target, cfg.base_dir, {}), store, "target"
        )
        trajs = await rollout(
            task, items, skill.text, target, workers=cfg.hardware.rollout_workers, store=store
        )
    finally:
        store.close()
    return {
        "skill": str(skill_path),
        "split": split,
        "n": len(trajs),
        "mean_score": mean_score(trajs),
        "pass_rate": sum(t.score.passed for t in trajs) / len(trajs),
        "items": {t.item_id: {"score": t.score.value, "feedback": t.score.feedback} for t in trajs},
    }


__all__ = ["evaluate_skill"]
