"""Zero-shot evaluation of any skill on a split: ``skillgrad eval``.

The run is assembled by ``session.open_session`` exactly as ``train`` assembles it (task,
checked splits, backends with their wrappers, judge binding, metering)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skillgrad.config import Config
from skillgrad.runs.cache import CallCache
from skillgrad.session import open_session
from skillgrad.skill import Skill
from skillgrad.train.rollout import mean_score, rollout


async def evaluate_skill(cfg: Config, skill_path: Path, split: str) -> dict[str, Any]:
    """Score ``skill_path`` on ``split`` with the configured target; calls cached under
    ``<output_root>/_eval/calls.sqlite`` so re-evaluating the same skill is free."""
    skill = Skill.load(skill_path)
    db = Path(cfg.env.output_root) / "_eval" / "calls.sqlite"
    store = CallCache(db)
    try:
        session = open_session(cfg, store)
        try:
            items = session.items[split]
            trajs = await rollout(
                session.task,
                items,
                skill.text,
                session.target,
                workers=cfg.hardware.rollout_workers,
                store=store,
            )
        finally:
            await session.aclose()
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
