"""Zero-shot evaluation of any skill on a split: ``skillgrad eval``; with ``--repeat N`` /
``--headroom`` also the noise floor (A/A) and the headroom of the split for that skill
(``train/trust/noise.py``, ``train/trust/headroom.py``; repeats go through the same evaluation
cache).

``eval_session`` assembles the run by ``session.open_session`` exactly as ``train`` assembles it
(task, checked splits, backends with their wrappers, judge binding, metering), once per
command: the skill, its baseline and the repeats are all scored in it."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from skillgrad.config import Config
from skillgrad.models.registry import check_models
from skillgrad.runs.cache import CallCache
from skillgrad.runs.io import append_jsonl, read_jsonl
from skillgrad.runs.layout import RunPaths
from skillgrad.session import Session, configured_specs, open_session
from skillgrad.skill.document import Skill
from skillgrad.stats import sign_flip_test, t_interval
from skillgrad.train.rollout import mean_score, rollout
from skillgrad.train.trust.headroom import headroom
from skillgrad.train.trust.noise import NoiseFloor, aa_test, gate_margin
from skillgrad.train.validate import configured_gate_rule
from skillgrad.types import Trajectory


def eval_cache_path(cfg: Config) -> Path:
    """``<output_root>/_eval/<setup>/calls.sqlite``: one cache per task, options and target, so
    scoring a skill in another harness or with another model (transfer) never reuses results."""
    target = cfg.models.target.model_dump(mode="json")
    setup = {"task": cfg.env.task, "options": cfg.env.options, "target": target}
    text = json.dumps(setup, sort_keys=True, default=str)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return RunPaths(Path(cfg.env.output_root) / "_eval" / digest).calls_db


@asynccontextmanager
async def eval_session(cfg: Config) -> AsyncIterator[Session]:
    """The session ``cfg``'s skills are scored in: its models checked, its calls cached per
    setup (``eval_cache_path``) so re-evaluating is free; closed on leaving."""
    check_models(configured_specs(cfg))  # before the evaluation cache is created
    store = CallCache(eval_cache_path(cfg))
    try:
        session = open_session(cfg, store)
        try:
            yield session
        finally:
            await session.aclose()
    finally:
        store.close()


async def evaluate_skill(cfg: Config, skill_path: Path, split: str) -> dict[str, Any]:
    """Score ``skill_path`` (a skill file or a package folder) on ``split`` with the configured
    task and target, in a session of its own (``eval_session``)."""
    skill = Skill.load(skill_path)
    async with eval_session(cfg) as session:
        return await score_skill(session, skill, skill_path, split)


async def score_skill(
    session: Session, skill: Skill, skill_path: Path, split: str, label: str | None = None
) -> dict[str, Any]:
    """``skill`` (loaded from ``skill_path``) scored on ``split`` in ``session``: the split's
    scores and each item's, recorded in the skill's run when it has one (``record_transfer``),
    under ``label`` when given (a text derived from the file, e.g. its rules alone), else
    the path."""
    cfg = session.cfg
    trajs = await rollout(
        session.task,
        session.items[split],
        skill.text,
        session.target,
        workers=cfg.hardware.rollout_workers,
        store=session.store,
    )
    result = {"skill": label or str(skill_path), "split": split, **split_scores(trajs)}
    result["items"] = {t.item_id: _item(t) for t in trajs}
    record_transfer(cfg, Path(skill_path), result)
    return result


def split_scores(trajs: list[Trajectory]) -> dict[str, Any]:
    """``n`` items on the split, ``missing`` of them unscored (an infrastructure failure), and
    the mean score and pass rate, both over the ``n - missing`` scored items (0.0 when none
    was scored): a missing item is neither a pass nor a failure."""
    scored = [t for t in trajs if t.infra_error is None]
    return {
        "n": len(trajs),
        "missing": len(trajs) - len(scored),
        "mean_score": mean_score(trajs),
        "pass_rate": sum(t.score.passed for t in scored) / len(scored) if scored else 0.0,
    }


def _item(t: Trajectory) -> dict[str, Any]:
    """One item's result; ``infra_error`` marks a rollout whose infrastructure failed (left
    out of the mean: missing, not zero)."""
    out: dict[str, Any] = {"score": t.score.value, "feedback": t.score.feedback}
    if t.infra_error is not None:
        out["infra_error"] = t.infra_error
    return out


def paired_comparison(result: dict[str, Any], baseline: dict[str, Any]) -> dict[str, Any]:
    """``result`` against ``baseline`` (two ``evaluate_skill`` results on the same split) item
    by item: the mean difference with its 95% Student-t interval over items, wins / losses /
    ties and the two-sided sign-flip p (exact where it can be enumerated). Items either skill
    could not score (an infrastructure failure) are left out and counted in ``missing_pairs``."""
    ours, theirs = result["items"], baseline["items"]
    ids = [i for i in ours if i in theirs]
    usable = [i for i in ids if "infra_error" not in ours[i] and "infra_error" not in theirs[i]]
    diffs = [float(ours[i]["score"]) - float(theirs[i]["score"]) for i in usable]
    interval = t_interval(diffs)  # fewer than two pairs: no spread, so no interval
    bounds = None if interval.single or interval.n == 0 else [interval.ci_low, interval.ci_high]
    return {
        "comparison": f"{result['split']}: {result['skill']} minus {baseline['skill']}, per item",
        **sign_flip_test(diffs).to_json(),
        "interval_95": bounds,
        "missing_pairs": len(set(ours) | set(theirs)) - len(usable),
    }


def setup_label(cfg: Config) -> str:
    """Where a skill was evaluated: the harness and its model, or the target model."""
    options = cfg.env.options
    harness = options.get("harness")
    if harness is None:
        return f"{cfg.env.task} / {cfg.models.target.name}"
    name = harness if isinstance(harness, str) else harness.get("preset") or harness.get("name")
    model = (options.get("endpoint") or {}).get("model") or "default model"
    return f"{cfg.env.task} / {name} / {model}"


def record_transfer(cfg: Config, skill_path: Path, result: dict[str, Any]) -> None:
    """When the evaluated skill belongs to a run (``<run>/best_skill``, ``<run>/skills/...``),
    append the result to that run's ``transfer.jsonl``: the run's report lists it. The same
    result again (a re-run answered from the cache) is listed once."""
    for folder in list(skill_path.resolve().parents)[:2]:
        paths = RunPaths(folder)
        if paths.config.exists() and paths.history.exists():
            keys = ("skill", "split", "n", "missing", "mean_score", "pass_rate")
            row = {k: result[k] for k in keys}
            row["setup"] = setup_label(cfg)
            if row not in read_jsonl(paths.transfer):
                append_jsonl(paths.transfer, row)
            return


async def repeated_passes(
    session: Session, skill: Skill, split: str, repeats: int
) -> tuple[list[list[Trajectory]], str, int]:
    """``repeats`` passes of ``skill`` on ``split``: the passes, how the repeats were sent, and
    the target calls they paid."""
    noise, passes = await _aa_on_split(session, skill, split, repeats)
    return passes, noise.calls, noise.calls_paid


async def _aa_on_split(
    session: Session, skill: Skill, split: str, repeats: int
) -> tuple[NoiseFloor, list[list[Trajectory]]]:
    """The A/A test of ``skill`` on ``split``: its first pass drawn at ``train.seed`` (as
    training draws its baseline; the result cache answers what the evaluation already scored),
    then the repeats."""
    cfg, items = session.cfg, session.items[split]
    first = await rollout(
        session.task,
        items,
        skill.text,
        session.target,
        workers=cfg.hardware.rollout_workers,
        store=session.store,
        seed=cfg.train.seed,
    )
    return await aa_test(session, skill.text, items, first, repeats)


async def noise_and_headroom(
    session: Session, skill: Skill, split: str, repeats: int, with_headroom: bool
) -> dict[str, Any]:
    """The ``noise_floor`` (and with ``with_headroom`` the ``headroom``) of a skill on a split,
    as ``skillgrad eval --repeat/--headroom`` prints and writes them."""
    noise, passes = await _aa_on_split(session, skill, split, max(1, repeats))
    out: dict[str, Any] = {"noise_floor": {**noise.to_json(), "message": noise.note}}
    if with_headroom:
        values = [x.score.value for x in passes[0] if x.infra_error is None]
        threshold = gate_margin(noise, session.cfg)
        rule = configured_gate_rule(session.cfg.train, threshold)
        out["headroom"] = headroom(values, rule, threshold).to_json()
    out["repeat_means"] = [
        math.fsum(x.score.value for x in p) / len(p) if p else 0.0 for p in passes
    ]
    return out


__all__ = [
    "eval_cache_path",
    "eval_session",
    "evaluate_skill",
    "noise_and_headroom",
    "paired_comparison",
    "repeated_passes",
    "score_skill",
    "split_scores",
]
