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

With ``rules_alone`` each run's best skill is also scored with its worked examples cut
(``without_examples``; written to ``<run>/_eval/best_skill.rules_alone.md``, a package as a
folder), on every target, the sweep's own included (the run never scored it): a smaller target
may copy a demonstration's objects where it would follow a rule in words. A best skill that holds
no example is its own rules alone: no call.
"""

from __future__ import annotations

import math
import shutil
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
from skillgrad.runs.io import atomic_write_text, flatten
from skillgrad.runs.layout import RunPaths
from skillgrad.runs.lock import RunLock
from skillgrad.runs.rundir import read_run_config
from skillgrad.runs.view import committed_skills, read_summary, read_transfer
from skillgrad.session import load_splits, resolved_spec
from skillgrad.skill.document import Skill, skill_hash
from skillgrad.skill.package import SkillPackage, is_package_text
from skillgrad.sweep.plan import load_plan_record
from skillgrad.sweep.summary import run_status, test_paired_diffs
from skillgrad.sweep.worker import COMPLETE
from skillgrad.train.examples import without_examples

SKILLS = ("initial", "best")
RULES = "rules"
"""The kind of the best skill with its worked examples cut (``rules_alone``)."""
RULES_FILE = "best_skill.rules_alone"
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
    rules: Skill | None = None
    """The best skill's rules alone when they were asked for and it holds a worked example
    (None: the best skill is its own rules alone, or they were not asked for)."""

    @property
    def rules_path(self) -> Path:
        """Where the rules alone are written to be scored (a package: a folder)."""
        package = self.rules is not None and is_package_text(self.rules.text)
        return self.root / "_eval" / (RULES_FILE if package else RULES_FILE + ".md")

    @property
    def own_target(self) -> ModelSpec:
        """The run's own target model (a function's file made absolute)."""
        return resolved_spec(self.cfg.models.target, self.cfg.base_dir)

    @property
    def main_target(self) -> str:
        """The run's own target (``provider:model``, a function's file made absolute)."""
        return self.own_target.name


@dataclass
class TransferPlan:
    sweep_dir: Path
    record: dict[str, Any]
    split: str
    targets: list[ModelSpec]
    runs: list[TransferRun]
    status: dict[str, str] = field(default_factory=dict)
    """Every job of the sweep by name: ``finished`` or why it is left out."""
    rules_alone: bool = False

    def kinds(self, run: TransferRun, target: ModelSpec) -> tuple[str, ...]:
        """The skills of ``run`` to score on ``target``: none of the initial and best skill on
        the run's own target (its values come from the run), the rules alone on every target
        when asked for and the best skill holds an example."""
        own = target.name == run.main_target
        rules = (RULES,) if run.rules is not None else ()  # set only when asked for
        return rules if own else (*SKILLS, *rules)

    def targets_of(self, run: TransferRun) -> list[ModelSpec]:
        """The given targets, and the run's own when its rules alone are to be scored and it
        was not given (the run never scored them there)."""
        given = [t.name for t in self.targets]
        own = [run.own_target] if run.rules is not None and run.main_target not in given else []
        return [*self.targets, *own]

    def calls(self) -> list[tuple[TransferRun, ModelSpec]]:
        """(run, target) pairs with a skill to score (``kinds``)."""
        return [(r, t) for r in self.runs for t in self.targets_of(r) if self.kinds(r, t)]

    def evaluations(self) -> int:
        """How many skills will be scored (each on the whole split)."""
        return sum(len(self.kinds(r, t)) for r, t in self.calls())


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


def prepare_transfer(
    sweep_dir: Path, targets: Sequence[str], split: str, rules_alone: bool = False
) -> TransferPlan:
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
    plan = TransferPlan(
        Path(sweep_dir).resolve(), record, split, specs, [], rules_alone=rules_alone
    )
    for job in record["jobs"]:  # checked by load_plan_record
        root = plan.sweep_dir / job["name"]
        status = run_status(root, read_summary(root))
        plan.status[job["name"]] = status
        if status in COMPLETE:
            plan.runs.append(_load_run(job, root, split, rules_alone))
    return plan


def _load_run(job: dict[str, Any], root: Path, split: str, rules_alone: bool) -> TransferRun:
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
    skills = skill_paths(paths)
    rules = None
    if rules_alone:
        best = Skill.load(skills["best"])
        cut = without_examples(best)
        rules = None if cut.hash == best.hash else cut
    run = TransferRun(job["name"], job["params"], job["seed"], root, cfg, skills, main, rules)
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
"""``{(run name, target name): {"initial" | "best" | "rules": score_skill's result}}``."""
OnResult = Callable[[TransferRun, ModelSpec, str, dict[str, Any]], None]


async def run_transfer(plan: TransferPlan, on_result: OnResult | None = None) -> Results:
    """Score each run's skills (``plan.kinds``) on each target; ``{(run, target): {kind:
    score_skill's result}}``. A run is locked while it is scored (we write into it)."""
    results: Results = {}
    for run in plan.runs:
        pending = [t for r, t in plan.calls() if r is run]
        if not pending:
            continue
        lock = RunLock.acquire(run.root)
        try:
            paths = dict(run.skills)
            if run.rules is not None and any(RULES in plan.kinds(run, t) for t in pending):
                paths[RULES] = write_rules_alone(run.rules_path, run.rules)
            for target in pending:
                cfg = target_config(run.cfg, target, run.root)
                async with eval_session(cfg) as session:  # one per target: its skills in it
                    for kind in plan.kinds(run, target):
                        skill = Skill.load(paths[kind])
                        result = await score_skill(session, skill, paths[kind], plan.split)
                        results.setdefault((run.name, target.name), {})[kind] = result
                        if on_result is not None:
                            on_result(run, target, kind, result)
        finally:
            lock.release()
    return results


def write_rules_alone(path: Path, rules: Skill) -> Path:
    """A run's rules alone written at ``path`` (``TransferRun.rules_path``), replacing what is
    there: always the text of the run's committed best skill with its examples cut."""
    if is_package_text(rules.text):
        if path.exists():
            shutil.rmtree(path)
        SkillPackage.from_bundle(rules.text).write(path)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, rules.text)
    return path


__all__ = [
    "RULES",
    "RULES_FILE",
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
    "write_rules_alone",
]
