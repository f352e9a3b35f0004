"""``skillgrad transfer``: every finished run of a sweep, its initial and its best skill scored
zero-shot on other targets, each on the run's own data split, through ``score_skill`` in one
``eval_session`` per run and target (the code path of ``skillgrad eval``, which also adds the
rows of the run's ``transfer.jsonl``).

``prepare_transfer`` checks everything before any call (the sweep, each run's config.json, skill
files and data, the targets); ``run_transfer`` scores. A run's setup is its own config.json (under
``--vary-split`` each seed keeps its split) with the target replaced; its results are cached in
the run, one cache per setup (``<run>/_eval/<setup>/calls.sqlite``, ``eval_cache_path``), so
a re-run after Ctrl-C or a kill pays only for what was never answered, and two targets never
share a result. A target that is a run's own ``models.target`` is not called: the matrix takes
that run's own scores (``transfer_matrix``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from skillgrad.config import Config, load_yaml, validate_config, with_former_defaults
from skillgrad.errors import ConfigError, RunDirError
from skillgrad.evaluate import eval_session, score_skill
from skillgrad.models.registry import check_models, parse_model_arg
from skillgrad.models.spec import ModelSpec
from skillgrad.plugins import resolve_object
from skillgrad.redact import REDACTED
from skillgrad.registry import load_task
from skillgrad.runs import integrity
from skillgrad.runs.io import flatten
from skillgrad.runs.layout import RunPaths
from skillgrad.runs.lock import RunLock
from skillgrad.runs.rundir import read_run_config
from skillgrad.runs.view import committed_skills, read_summary, read_transfer
from skillgrad.session import load_splits, resolved_spec
from skillgrad.skill.document import Skill, skill_hash
from skillgrad.sweep.plan import load_plan_record
from skillgrad.sweep.summary import run_status, test_paired_diffs
from skillgrad.sweep.worker import COMPLETE

SKILLS = ("initial", "best")
SPLITS = ("val", "test")


@dataclass(frozen=True)
class RunScores:
    """One run on one target: the two skills' mean scores and the per-item differences."""

    initial: float | None
    best: float | None
    diffs: list[float]
    missing: int


def main_scores(paths: RunPaths, split: str) -> RunScores:
    """The run on its own target: its summary's scores and its result cache's item pairs (the
    numbers of sweep_summary.json; no call)."""
    summary = read_summary(paths.root) or {}
    diffs, missing = test_paired_diffs(paths.root, split)
    return RunScores(_number(summary, f"{split}_initial"), _number(summary, f"{split}_best"),
                     diffs, missing)  # fmt: skip


def _number(summary: dict[str, Any], key: str) -> float | None:
    value = summary.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


@dataclass(frozen=True)
class TransferRun:
    """A finished run of the sweep: its resolved config and its two skills' paths."""

    name: str
    params: dict[str, Any]
    seed: int
    root: Path
    cfg: Config
    skills: dict[str, Path]
    main: RunScores
    """The run's scores on its own target, the sweep's main target (``main_scores``)."""

    @property
    def main_target(self) -> str:
        """The run's own target (``provider:model``, a function's file made absolute)."""
        return resolved_spec(self.cfg.models.target, self.cfg.base_dir).name


@dataclass
class TransferPlan:
    sweep_dir: Path
    record: dict[str, Any]
    split: str
    targets: list[ModelSpec]
    runs: list[TransferRun]
    status: dict[str, str] = field(default_factory=dict)
    """Every job of the sweep by name: ``finished`` or why it is left out."""

    def calls(self) -> list[tuple[TransferRun, ModelSpec]]:
        """(run, target) pairs to score: a target that is the run's own is not called."""
        return [(r, t) for r in self.runs for t in self.targets if t.name != r.main_target]


def parse_targets(values: Sequence[str]) -> list[ModelSpec]:
    """``--target_model`` values (``provider:model``, or a YAML mapping of model settings) as
    specs, each checked installed (``check_models``: a local model that is not names
    ``skillgrad models pull``). A function model's relative file is relative to the current
    directory."""
    if not values:
        raise ConfigError("give at least one --target_model PROVIDER:MODEL")
    specs: list[ModelSpec] = []
    for value in values:
        where = f"--target_model {value}"
        raw = load_yaml(value, where) if value.lstrip().startswith("{") else value
        if not isinstance(raw, (str, dict)):
            raise ConfigError(f"{where}: expected PROVIDER:MODEL or a mapping of model settings")
        try:
            parsed = parse_model_arg(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            key = ".".join(map(str, first["loc"]))
            raise ConfigError(f"{where}: {key + ': ' if key else ''}{first['msg']}") from None
        spec = resolved_spec(parsed, str(Path.cwd()))
        if spec.provider == "function":  # no install check of its own: import it now
            resolve_object(spec.model)
        if any(s.name == spec.name for s in specs):
            raise ConfigError(f"--target_model {value}: given twice")
        specs.append(spec)
    check_models(specs)
    return specs


def prepare_transfer(sweep_dir: Path, targets: Sequence[str], split: str) -> TransferPlan:
    """Everything checked before any model call or write: raises a located SkillgradError."""
    if split not in SPLITS:
        raise ConfigError(f"--split must be val or test, got {split!r}")
    specs = parse_targets(targets)
    record = load_plan_record(sweep_dir)
    if record is None:
        raise RunDirError(
            f"{sweep_dir} is not a sweep directory (no readable sweep.json): give the --out "
            "folder of a `skillgrad sweep`"
        )
    plan = TransferPlan(Path(sweep_dir).resolve(), record, split, specs, [])
    for job in _jobs(record, plan.sweep_dir):
        root = plan.sweep_dir / job["name"]
        status = run_status(root, read_summary(root))
        plan.status[job["name"]] = status
        if status in COMPLETE:
            plan.runs.append(_load_run(job, root, split))
    return plan


def _jobs(record: dict[str, Any], sweep_dir: Path) -> list[dict[str, Any]]:
    """The jobs of ``sweep.json``, each naming a folder directly inside the sweep."""
    jobs = record.get("jobs")
    if not isinstance(jobs, list) or not all(_valid_job(j) for j in jobs):
        raise RunDirError(
            f"{sweep_dir / 'sweep.json'}: its jobs are damaged (each needs a name, params and a "
            "seed); restore the file, or re-run the sweep command that made it"
        )
    return jobs


def _valid_job(job: object) -> bool:
    """A job with params, a seed and a folder name of one path component (never ``..`` or a
    path out of the sweep)."""
    if not isinstance(job, dict):
        return False
    name = job.get("name")
    plain = isinstance(name, str) and name not in ("", ".", "..") and Path(name).name == name
    return plain and isinstance(job.get("params"), dict) and isinstance(job.get("seed"), int)


def _load_run(job: dict[str, Any], root: Path, split: str) -> TransferRun:
    """A finished run, checked: no symlink in it, its config, its own scores (summary and
    result cache), its skills as committed, its data and its transfer.jsonl readable."""
    paths = RunPaths(root)
    if root.is_symlink():  # scoring writes into the run: never through a link out of the sweep
        raise RunDirError(
            f"{root} is a symlink (to {root.readlink()}); a sweep keeps its runs as folders of "
            "its own. Replace it with the run's folder."
        )
    integrity.check_no_links(root)
    cfg = run_config(paths)
    main = main_scores(paths, split)
    run = TransferRun(job["name"], job["params"], job["seed"], root, cfg, skill_paths(paths), main)
    task = load_task(cfg.env.task, dict(cfg.env.options), Path(cfg.base_dir))
    integrity.check_data(paths, load_splits(task, require_test=False))
    read_transfer(root)  # a damaged transfer.jsonl is refused before any call is made
    return run


def run_config(paths: RunPaths) -> Config:
    """The run's own resolved config (config.json), e.g. its ``env.options.seed``."""
    raw = read_run_config(paths)
    hidden = [k for k, v in flatten(raw).items() if isinstance(v, str) and REDACTED in v]
    if hidden:
        raise RunDirError(
            f"{paths.config}: {', '.join(hidden)} held a secret that {paths.config.name} keeps "
            "only as "
            f"{REDACTED}, so the run's setup cannot be rebuilt from it. Name the secret by an "
            "environment variable (the *_env settings) in the config, or evaluate the run's "
            "skills with `skillgrad eval CONFIG --skill ...`"
        )
    # a run begun before a default changed ran with the former value
    return validate_config(with_former_defaults(raw), source=str(paths.config))


def skill_paths(paths: RunPaths) -> dict[str, Path]:
    """The initial and the best skill (a package's folders when the run trained a package),
    each the text the run committed (``runtime_state.json``): a hand-edited or missing file
    would be scored in the run's name."""
    texts = dict(zip(("initial", "best"), committed_skills(paths.root), strict=True))
    out: dict[str, Path] = {}
    for kind, file in (("initial", paths.skill_version(0)), ("best", paths.best_skill)):
        folder = file.with_suffix("")  # skills/skill_v0000/, best_skill/: a package
        path = folder if folder.is_dir() else file
        if not path.exists():
            raise RunDirError(f"{path}: missing in a finished run; {_RESTORE}")
        if Skill.load(path).hash != skill_hash(texts[kind]):
            raise RunDirError(
                f"{path}: not the {kind} skill the run committed ({paths.state.name}); {_RESTORE}"
            )
        out[kind] = path
    return out


_RESTORE = f"restore it from a backup ({RunPaths(Path()).state.name} holds the committed texts)"


def target_config(cfg: Config, target: ModelSpec, root: Path) -> Config:
    """The run's config with ``target`` as its target and its eval cache in the run; its check
    targets dropped (only training evaluates on them)."""
    return cfg.model_copy(
        update={
            "models": cfg.models.model_copy(update={"target": target}),
            "train": cfg.train.model_copy(update={"check_targets": []}),
            "env": cfg.env.model_copy(update={"output_root": str(root)}),
        }
    )


Results = dict[tuple[str, str], dict[str, dict[str, Any]]]
"""``{(run name, target name): {"initial" | "best": score_skill's result}}``."""
OnResult = Callable[[TransferRun, ModelSpec, str, dict[str, Any]], None]


async def run_transfer(plan: TransferPlan, on_result: OnResult | None = None) -> Results:
    """Score each run's two skills on each target not its own; ``{(run, target): {kind:
    score_skill's result}}``. A run is locked while it is scored (we write into it)."""
    results: Results = {}
    for run in plan.runs:
        pending = [t for r, t in plan.calls() if r is run]
        if not pending:
            continue
        lock = RunLock.acquire(run.root)
        try:
            for target in pending:
                cfg = target_config(run.cfg, target, run.root)
                skills = {kind: Skill.load(run.skills[kind]) for kind in SKILLS}
                async with eval_session(cfg) as session:  # one per target: both skills in it
                    for kind in SKILLS:
                        path = run.skills[kind]
                        result = await score_skill(session, skills[kind], path, plan.split)
                        results.setdefault((run.name, target.name), {})[kind] = result
                        if on_result is not None:
                            on_result(run, target, kind, result)
        finally:
            lock.release()
    return results


__all__ = [
    "SKILLS",
    "RunScores",
    "TransferPlan",
    "TransferRun",
    "main_scores",
    "parse_targets",
    "prepare_transfer",
    "run_config",
    "run_transfer",
    "skill_paths",
    "target_config",
]
