"""The skill card: what an exported skill was trained for and the evidence it works, as JSON
(``skill_card.json``) and as Markdown (``SKILL_CARD.md``).

Every number is copied from the run's ``summary.json`` (and, with a sweep, from its
``sweep_summary.json``) without rounding, so a card can be checked against its run. The config
digest is the sha256 of ``config.json``'s bytes (``sha256sum config.json`` gives the same); the
commit is the one the run recorded at its start (``runs/provenance.py``), never the exporter's.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from skillgrad.errors import RunDirError
from skillgrad.export.source import RunSkill, task_name
from skillgrad.runs.io import read_json
from skillgrad.runs.layout import RunPaths
from skillgrad.runs.provenance import CodeProvenance, describe, read_code
from skillgrad.runs.view import read_splits

CARD_VERSION = 1
CARD_JSON = "skill_card.json"
CARD_MD = "SKILL_CARD.md"
_CONTROL_KEYS = ("test_empty", "test_placebo", "test_gain_vs_empty", "test_gain_vs_placebo")
_SWEEP_KEYS = ("test_gain", "test_gain_vs_placebo", "test_gain_vs_empty", "paired_test")


SUMMARY = RunPaths(Path()).summary.name


def build_card(
    run: RunSkill, fmt: str, installed: list[str], sweep_dir: Path | None = None
) -> dict[str, Any]:
    """The card of ``run``'s best skill exported as ``fmt`` to ``installed`` (paths relative
    to the destination)."""
    from skillgrad import __version__

    s = run.summary
    return {
        "card_version": CARD_VERSION,
        "name": run.name,
        "description": run.description,
        "format": fmt,
        "installed": installed,
        "trained_for": {"task": task_name(s, run.config), "run_name": s.get("run_name")},
        "target_model": s.get("target_model") or _model(run.config, "target"),
        "optimizer_model": s.get("optimizer_model") or _model(run.config, "optimizer"),
        "status": s.get("status"),
        "stop_reason": s.get("stop_reason"),
        "data": _data(run.run_dir),
        "val": {"initial": s.get("val_initial"), "best": s.get("val_best")},
        "test": {"initial": s.get("test_initial"), "best": s.get("test_best")},
        "skill_tokens": {
            "initial": s.get("skill_tokens_initial"),
            "best": s.get("skill_tokens_best"),
        },
        "steps": s.get("steps"),
        "best_step": s.get("best_step"),
        "controls": _controls(s),
        "sweep": sweep_evidence(run.run_dir, sweep_dir) if sweep_dir is not None else None,
        "provenance": {
            **_code(s),
            "config_sha256": _config_digest(run.run_dir),
            "exported_by": f"skillgrad {__version__}",
        },
    }


def _model(config: dict[str, Any], role: str) -> str | None:
    models = config.get("models")
    spec = models.get(role) if isinstance(models, dict) else None
    if not isinstance(spec, dict):
        return None
    return f"{spec.get('provider')}:{spec.get('model')}"


def _data(run_dir: Path) -> dict[str, Any]:
    """Items per split (``splits.json``) and each split's sha256 (``data_sha256.json``)."""
    splits = read_splits(run_dir)
    sizes = {k: len(v) for k, v in splits.items() if isinstance(v, list)}
    digests = read_json(RunPaths(run_dir).data_digest, None)
    return {**sizes, "sha256": digests if isinstance(digests, dict) else None}


def _controls(summary: dict[str, Any]) -> dict[str, Any] | None:
    """The run's own control arms (``train.controls``) on its test items, or None."""
    controls = summary.get("controls")
    if not isinstance(controls, dict):
        return None
    return {k: controls.get(k) for k in _CONTROL_KEYS}


def _code(summary: dict[str, Any]) -> dict[str, Any]:
    """The code that trained the run (summary.json's ``code``): its start's commit, dirty
    flag and skillgrad version, and each different code a resume ran; ``code`` None (and the
    rest null) for a run written before it was recorded."""
    code = read_code(summary.get("code"))
    if code is None:
        return {"commit": None, "dirty": None, "skillgrad_version": None, "code": None}
    start = CodeProvenance.from_json(code)
    return {
        "commit": start.commit,
        "dirty": start.dirty,
        "skillgrad_version": start.version,
        "code": code,
    }


def _config_digest(run_dir: Path) -> str | None:
    path = RunPaths(run_dir).config
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def sweep_evidence(run_dir: Path, sweep_dir: Path) -> dict[str, Any]:
    """The interval over seeds of the sweep configuration ``run_dir`` belongs to, and its
    placebo arm, copied from ``sweep_summary.json``; RunDirError when the run is not one of the
    sweep's runs or the sweep has no summary yet."""
    from skillgrad.sweep.plan import SUMMARY_FILE

    path = Path(sweep_dir) / SUMMARY_FILE
    data = read_json(path, None)
    if not isinstance(data, dict) or not isinstance(data.get("configs"), list):
        raise RunDirError(
            f"{path}: missing or not a sweep summary; pass the folder of `skillgrad sweep` "
            "(re-run its command to finish it and write the summary)"
        )
    if Path(run_dir).resolve().parent != Path(sweep_dir).resolve():
        raise RunDirError(
            f"--sweep {sweep_dir}: {run_dir} is not one of its runs (a sweep's runs are the "
            "folders inside it); pass the sweep the run was trained in, or leave --sweep out"
        )
    name = Path(run_dir).resolve().name
    for config in data["configs"]:
        if isinstance(config, dict) and name in (config.get("runs") or []):
            return {
                "sweep_dir": Path(sweep_dir).name,
                "params": config.get("params"),
                "seeds": config.get("seeds"),
                "runs_finished": config.get("runs_finished"),
                "interval": data.get("interval"),
                **{k: config.get(k) for k in _SWEEP_KEYS},
            }
    raise RunDirError(f"{path}: no configuration lists the run {name!r}")


def num(value: Any) -> str:
    """A number exactly as the summary holds it (the shortest text that reads back equal)."""
    if value is None:
        return "n/a"
    return repr(value) if isinstance(value, float) else str(value)


def _interval(stats: Any) -> str:
    if not isinstance(stats, dict) or stats.get("mean") is None:
        return "n/a"
    low, high = stats.get("ci_low"), stats.get("ci_high")
    return f"{num(stats['mean'])} [{num(low)}, {num(high)}] over {num(stats.get('n'))} seeds"


def render_card(card: dict[str, Any]) -> str:
    """``SKILL_CARD.md``: the card as a page a person reads before shipping the skill."""
    data, prov = card["data"], card["provenance"]
    sizes = ", ".join(f"{k} {num(data.get(k))}" for k in ("train", "val", "test"))
    lines = [
        f"# Skill card: {card['name']}",
        "",
        f"{card['description']}",
        "",
        f"- trained for: task `{card['trained_for']['task']}` "
        f"(run `{card['trained_for']['run_name']}`, {card['status']})",
        f"- target model: `{card['target_model']}`; optimizer model: `{card['optimizer_model']}`",
        f"- data: {sizes} items",
        f"- val (selection split): {num(card['val']['initial'])} -> {num(card['val']['best'])}",
        f"- test (held out): {num(card['test']['initial'])} -> {num(card['test']['best'])}",
        f"- skill tokens: {num(card['skill_tokens']['initial'])} -> "
        f"{num(card['skill_tokens']['best'])}",
    ]
    lines += _controls_lines(card.get("controls")) + _sweep_lines(card.get("sweep"))
    lines += [
        f"- code: {describe(prov.get('code'))}",
        f"- config sha256: `{prov['config_sha256']}`",
        f"- exported by {prov['exported_by']} as `{card['format']}`: "
        + ", ".join(f"`{p}`" for p in card["installed"]),
        "",
        f"The numbers are copied from the run's {SUMMARY}{_sweep_source(card)} unrounded; "
        f"{CARD_JSON} holds them for tools.",
        "",
    ]
    return "\n".join(lines)


def _controls_lines(controls: dict[str, Any] | None) -> list[str]:
    if not controls:
        return []
    return [
        f"- this run's control arms on test: empty skill {num(controls['test_empty'])}, placebo "
        f"{num(controls['test_placebo'])}; best minus placebo "
        f"{num(controls['test_gain_vs_placebo'])}, minus empty "
        f"{num(controls['test_gain_vs_empty'])}"
    ]


def _sweep_lines(sweep: dict[str, Any] | None) -> list[str]:
    if not sweep:
        return []
    placebo = sweep.get("test_gain_vs_placebo")
    has_placebo = isinstance(placebo, dict) and placebo.get("mean") is not None
    return [
        f"- sweep `{sweep['sweep_dir']}` (seeds {sweep.get('seeds')}): test gain "
        f"{_interval(sweep.get('test_gain'))} ({sweep.get('interval')})",
        "- over the placebo: "
        + (_interval(placebo) if has_placebo else "no placebo arm (sweep without --controls)"),
    ]


def _sweep_source(card: dict[str, Any]) -> str:
    return " and the sweep's sweep_summary.json" if card.get("sweep") else ""


__all__ = ["CARD_JSON", "CARD_MD", "CARD_VERSION", "build_card", "render_card", "sweep_evidence"]
