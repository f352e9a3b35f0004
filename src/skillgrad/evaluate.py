"""Zero-shot evaluation of any skill on a split: ``skillgrad eval``; with ``--repeat N`` /
``--headroom`` also the noise floor (A/A) and the headroom of the split for that skill
(``train/trust/noise.py``, ``train/trust/headroom.py``; repeats go through the same evaluation
cache).

The run is assembled by ``session.open_session`` exactly as ``train`` assembles it (task,
checked splits, backends with their wrappers, judge binding, metering)."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

from skillgrad.config import Config
from skillgrad.models.context import call_context
from skillgrad.models.registry import check_models
from skillgrad.runs.cache import CallCache
from skillgrad.runs.io import append_jsonl, read_jsonl
from skillgrad.runs.layout import RunPaths
from skillgrad.session import configured_specs, open_session
from skillgrad.skill.document import Skill
from skillgrad.stats import sign_flip_test, t_interval
from skillgrad.train.gate import GateRule
from skillgrad.train.rollout import mean_score, rollout
from skillgrad.train.trust.headroom import headroom
from skillgrad.train.trust.noise import (
    REPEAT_SAMPLE_BASE,
    noise_calls,
    noise_floor_of,
    repeat_pass,
    target_calls,
)
from skillgrad.types import Trajectory


def eval_cache_path(cfg: Config) -> Path:
    """``<output_root>/_eval/<setup>/calls.sqlite``: one cache per task, options and target, so
    scoring a skill in another harness or with another model (transfer) never reuses results."""
    target = cfg.models.target.model_dump(mode="json")
    setup = {"task": cfg.env.task, "options": cfg.env.options, "target": target}
    text = json.dumps(setup, sort_keys=True, default=str)
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return RunPaths(Path(cfg.env.output_root) / "_eval" / digest).calls_db


async def evaluate_skill(cfg: Config, skill_path: Path, split: str) -> dict[str, Any]:
    """Score ``skill_path`` (a skill file or a package folder) on ``split`` with the configured
    task and target; calls cached per setup (``eval_cache_path``) so re-evaluating is free."""
    skill = Skill.load(skill_path)
    check_models(configured_specs(cfg))  # before the evaluation cache is created
    db = eval_cache_path(cfg)
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
    result = {"skill": str(skill_path), "split": split, **split_scores(trajs)}
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
    cfg: Config, skill_path: Path, split: str, repeats: int
) -> tuple[list[list[Trajectory]], str, int]:
    """``repeats`` passes of the skill on ``split`` (the first an ordinary evaluation): the
    passes, how the repeats were sent, and the target calls they paid."""
    skill = Skill.load(skill_path)
    check_models(configured_specs(cfg))
    store = CallCache(eval_cache_path(cfg))
    mode = noise_calls(cfg)
    try:
        session = open_session(cfg, store)
        try:
            items, workers = session.items[split], cfg.hardware.rollout_workers
            args = (session.task, items, skill.text, session.target)
            first = await rollout(*args, workers=workers, store=store, seed=cfg.train.seed)
            before = target_calls(store)
            passes = [first]
            with call_context("noise_floor", 0):
                for r in range(1, repeats):
                    sample = REPEAT_SAMPLE_BASE + r
                    passes.append(
                        await repeat_pass(
                            *args,
                            store=store,
                            sample=sample,
                            mode=mode,
                            seed=cfg.train.seed,
                            workers=workers,
                        )
                    )
            paid = target_calls(store) - before
        finally:
            await session.aclose()
    finally:
        store.close()
    return passes, mode, paid


async def noise_and_headroom(
    cfg: Config, skill_path: Path, split: str, repeats: int, with_headroom: bool
) -> dict[str, Any]:
    """The ``noise_floor`` (and with ``with_headroom`` the ``headroom``) of a skill on a split,
    as ``skillgrad eval --repeat/--headroom`` prints and writes them."""
    passes, mode, paid = await repeated_passes(cfg, skill_path, split, max(1, repeats))
    t = cfg.train
    noise = noise_floor_of(passes, mode, t.gate_confidence, paid)
    out: dict[str, Any] = {"noise_floor": {**noise.to_json(), "message": noise.note}}
    if with_headroom:
        values = [x.score.value for x in passes[0] if x.infra_error is None]
        threshold = noise.noise_threshold if t.noise_gate else 0.0
        rule = GateRule(t.gate_rule, t.gate_confidence, max(t.gate_min_delta, threshold))
        out["headroom"] = headroom(values, rule, threshold).to_json()
    out["repeat_means"] = [
        math.fsum(x.score.value for x in p) / len(p) if p else 0.0 for p in passes
    ]
    return out


__all__ = [
    "eval_cache_path",
    "evaluate_skill",
    "noise_and_headroom",
    "paired_comparison",
    "repeated_passes",
    "split_scores",
]
