"""The plan of a sweep: grid combinations x seeds -> one run job each, and the sweep's identity.

A job is plain data (config path + ``--set`` overrides + run directory), so any executor can run
it in another process or on another machine through the public API (``load_config`` +
``run_training``). ``sweep.json`` in the sweep directory records the plan; re-running the same
command finds the same plan and resumes, a different one is refused (``check_or_write_plan``).
"""

from __future__ import annotations

import itertools
import json
import re
import secrets
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from skillgrad.config import Config, config_defaults, kept_settings, load_config, load_yaml
from skillgrad.errors import ConfigError, RunDirError
from skillgrad.runs.io import atomic_write_json, private_dirs, read_json
from skillgrad.runs.rundir import _comparable, _flat_diff

PLAN_FILE = "sweep.json"
PLAN_FIX = (
    "Restore it from a backup, or give `skillgrad sweep` another --out folder (each run inside "
    "this one stays readable: `skillgrad report <run folder>`)."
)
SUMMARY_FILE = "sweep_summary.json"
# Keys a sweep sets itself: a grid over them would be meaningless or break the layout.
RESERVED_KEYS = ("train.seed", "env.output_root", "env.run_name")


@dataclass(frozen=True)
class GridAxis:
    key: str
    values: tuple[Any, ...]


@dataclass(frozen=True)
class RunJob:
    """One run of the sweep: ``load_config(config_path, overrides)`` trained in ``run_dir``."""

    name: str
    config_path: str
    overrides: tuple[str, ...]
    run_dir: str
    params: dict[str, Any]
    seed: int
    sweep_dir: str
    sweep_id: str

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "overrides": list(self.overrides)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunJob:
        return cls(**{**data, "overrides": tuple(data["overrides"])})


@dataclass(frozen=True)
class SweepPlan:
    sweep_dir: Path
    sweep_id: str
    config_path: str
    seeds: tuple[int, ...]
    grid: tuple[GridAxis, ...]
    vary_split: bool
    jobs: tuple[RunJob, ...]
    base_config: dict[str, Any]
    ablate: tuple[GridAxis, ...] = ()
    """``--ablate``: the base config and one configuration per listed value, each changing one
    setting (instead of the grid's product)."""
    run_configs: dict[str, Config] = field(default_factory=dict, compare=False, repr=False)
    """Each job's resolved config by job name, as ``build_plan`` checked it (the driver's
    copy: a job carries only its config path and overrides)."""

    def run_config(self, job: RunJob) -> Config:
        """``job``'s resolved config: the plan's copy, else loaded."""
        cfg = self.run_configs.get(job.name)
        return cfg if cfg is not None else load_config(job.config_path, list(job.overrides))

    def configs(self) -> list[dict[str, Any]]:
        """The grid combinations in plan order (``[{}]`` without a grid)."""
        seen: list[dict[str, Any]] = []
        for job in self.jobs:
            if job.params not in seen:
                seen.append(job.params)
        return seen

    def identity(self) -> dict[str, Any]:
        """What must be the same for a re-run to resume this sweep."""
        return {
            "seeds": list(self.seeds),
            "grid": [{"key": a.key, "values": list(a.values)} for a in self.grid],
            "ablate": [{"key": a.key, "values": list(a.values)} for a in self.ablate],
            "vary_split": self.vary_split,
            "config": _comparable(self.base_config),
        }


def parse_grid(specs: Sequence[str], option: str = "--grid") -> tuple[GridAxis, ...]:
    """``["train.lr_scheduler=constant,cosine"]`` -> axes; values are YAML (a list or mapping
    may hold commas: ``split_values``; ``on``/``off`` stay words: ``_grid_value``). ``option``:
    the CLI option named in errors."""
    axes: list[GridAxis] = []
    for spec in specs:
        key, sep, raw = spec.partition("=")
        key = key.strip()
        where = f"{option} {spec!r}"
        if not sep or not key or not raw.strip():
            raise ConfigError(
                f"{where}: expected KEY=V1,V2,... e.g. train.lr_scheduler=constant,cosine"
            )
        if key in RESERVED_KEYS:
            raise ConfigError(
                f"{where}: {key} is set by the sweep itself "
                f"({'use --seeds' if key == 'train.seed' else 'use --out'})"
            )
        if any(a.key == key for a in axes):
            raise ConfigError(f"{where}: {key} appears in two {option} options; give it once")
        values = tuple(_grid_value(v, where) for v in split_values(raw))
        if len({json.dumps(v, sort_keys=True) for v in values}) != len(values):
            raise ConfigError(f"{where}: a value is listed twice")
        axes.append(GridAxis(key, values))
    return tuple(axes)


def _grid_value(text: str, where: str) -> Any:
    """One listed value as YAML, except ``on`` and ``off``, which stay the words the config's
    switches take (YAML 1.1 reads them as booleans: an arm would be labelled
    ``train.explore=false``); '' for an empty value."""
    if not text.strip():
        return ""
    if text.strip().lower() in ("on", "off"):
        return text.strip().lower()
    return load_yaml(text, where)


def split_values(raw: str) -> list[str]:
    """``a,[b, c],{d: 1}`` -> ``["a", "[b, c]", "{d: 1}"]``: the commas between values, not
    those inside a YAML list or mapping or a quoted string (a grid over lists of models,
    e.g. ``train.check_targets=[],[llamacpp:smollm2-135m, llamacpp:qwen2.5-coder-1.5b]``)."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(raw):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            parts.append(raw[start:i])
            start = i + 1
    return [*parts, raw[start:]]


def _slug(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    safe = re.sub(r"[^A-Za-z0-9.+-]+|\.{2,}", "-", text).strip("-.")
    return safe[:24] or "x"


def run_name(index: int, width: int, params: dict[str, Any], seed: int) -> str:
    """A path-safe, unique, readable run name: ``c01_lr_scheduler-cosine_seed2``."""
    if not params:
        return f"seed{seed}"
    last = [k.rsplit(".", 1)[-1] for k in params]
    parts = [
        f"{(short if last.count(short) == 1 else key)}-{_slug(v)}"
        for (key, v), short in zip(params.items(), last, strict=True)
    ]
    return f"c{index:0{width}d}_{'_'.join(parts)}"[:100] + f"_seed{seed}"


def build_plan(
    config_path: Path,
    *,
    seeds: int,
    grid: Sequence[str] = (),
    sets: Sequence[str] = (),
    out: Path | None = None,
    vary_split: bool = False,
    ablate: Sequence[str] = (),
) -> SweepPlan:
    """Resolve every run's config (so a bad grid value fails before anything runs). With
    ``ablate``, the configurations are the base config and one per listed value, each changing
    only its own key (compared with the base config: ``sweep/arms.py``)."""
    if seeds < 1:
        raise ConfigError(f"--seeds must be >= 1, got {seeds}")
    if grid and ablate:
        raise ConfigError(
            "give --grid (every combination) or --ablate (one setting changed at a time from "
            "the base config), not both"
        )
    axes = parse_grid(grid)
    changes = parse_grid(ablate, "--ablate")
    base = load_config(config_path, list(sets))
    sweep_dir = (out or _default_out(base, config_path)).resolve()
    kept = _kept_sets(sweep_dir, base)
    if kept:  # every run of a resumed sweep keeps a setting whose default changed since
        sets = [*kept, *sets]
        base = load_config(config_path, list(sets))
    combos = [dict(zip([a.key for a in axes], vs, strict=True)) for vs in
              itertools.product(*(a.values for a in axes))]  # fmt: skip
    if changes:
        combos = [{}, *({a.key: v} for a in changes for v in a.values)]
    first = base.train.seed
    data_seed = base.env.options.get("seed", 0)
    if vary_split and not isinstance(data_seed, int):
        raise ConfigError(f"--vary-split needs an integer env.options.seed, got {data_seed!r}")
    width = len(str(max(len(combos) - 1, 0)))
    sweep_id = _existing_id(sweep_dir) or secrets.token_hex(8)
    jobs: list[RunJob] = []
    configs: dict[str, Config] = {}
    # seed by seed: every configuration's run of a seed before the next seed, so a sweep stopped
    # early still pairs its configurations on the seeds it finished (sweep/arms.py)
    for i in range(seeds):
        for index, params in enumerate(combos):
            overrides = [*sets, *(f"{k}={json.dumps(v)}" for k, v in params.items())]
            overrides.append(f"train.seed={first + i}")
            if vary_split:
                overrides.append(f"env.options.seed={data_seed + i}")
            name = run_name(index, width, params, first + i)
            configs[name] = _resolve(config_path, overrides, name)
            if changes and params and configs[name] == configs[run_name(0, width, {}, first + i)]:
                key, value = next(iter(params.items()))
                raise ConfigError(
                    f"--ablate {key}={json.dumps(value)}: that is the base config's value "
                    "already; an ablation arm must change it (--set changes the base)"
                )
            jobs.append(
                RunJob(name, str(config_path.resolve()), tuple(overrides),
                       str(sweep_dir / name), params, first + i, str(sweep_dir), sweep_id)
            )  # fmt: skip
    return SweepPlan(
        sweep_dir, sweep_id, str(config_path.resolve()), tuple(range(first, first + seeds)),
        axes, vary_split, tuple(jobs), base.redacted_json(), ablate=changes, run_configs=configs,
    )  # fmt: skip


def _default_out(cfg: Config, config_path: Path) -> Path:
    root = Path(cfg.env.output_root)
    return (root if root.is_absolute() else Path.cwd() / root) / f"{config_path.stem}-sweep"


def _resolve(config_path: Path, overrides: list[str], name: str) -> Config:
    try:
        return load_config(config_path, overrides)
    except ConfigError as exc:
        raise ConfigError(f"sweep run {name}: {exc}") from None


def _kept_sets(sweep_dir: Path, base: Config) -> list[str]:
    """``--set`` overrides keeping what a stored sweep ran with (``config.kept_settings``)."""
    data = read_plan(sweep_dir)
    stored = data.get("config") if isinstance(data, dict) else None
    if not isinstance(stored, dict):
        return []
    return [f"{k}={json.dumps(v)}" for k, v in kept_settings(base, stored).items()]


def _existing_id(sweep_dir: Path) -> str | None:
    data = read_plan(sweep_dir)
    return str(data["sweep_id"]) if isinstance(data, dict) and "sweep_id" in data else None


def check_or_write_plan(plan: SweepPlan) -> bool:
    """Write ``sweep.json`` for a new sweep; for an existing one, refuse a different plan, except
    more seeds of the same one (``--seeds`` raised), which extends it in place.

    Returns True when resuming. Limits and parallelism (budget, hardware) may change."""
    path = plan.sweep_dir / PLAN_FILE
    stored = read_plan(plan.sweep_dir)
    record = {
        "sweep_id": plan.sweep_id,
        "config_path": plan.config_path,
        **plan.identity(),
        "jobs": [
            {"name": j.name, "params": j.params, "seed": j.seed, "overrides": list(j.overrides)}
            for j in plan.jobs
        ],
    }
    if stored is None:
        if plan.sweep_dir.exists() and any(plan.sweep_dir.iterdir()):
            raise RunDirError(
                f"{plan.sweep_dir} exists and is not a sweep directory (no {PLAN_FILE}); "
                "choose another --out"
            )
        private_dirs(plan.sweep_dir)
        atomic_write_json(path, record)
        return False
    if not isinstance(stored, dict) or "sweep_id" not in stored:
        raise RunDirError(f"{path}: not a skillgrad sweep record; restore it or use another --out")
    ran = {k: stored.get(k) for k in ("seeds", "grid", "vary_split", "config")}
    ran["ablate"] = stored.get("ablate", [])  # absent from sweeps planned before --ablate
    defaults = {"config": _comparable(config_defaults())}
    if _more_seeds(ran["seeds"], list(plan.seeds)) and not _flat_diff(
        {**ran, "seeds": list(plan.seeds)}, plan.identity(), defaults=defaults
    ):  # the same sweep with more seeds: it grows in place, its finished runs kept
        atomic_write_json(path, record)
        return True
    diffs = _flat_diff(ran, plan.identity(), defaults=defaults)
    if diffs:
        raise RunDirError(
            f"{plan.sweep_dir} holds a different sweep (seeds, grid or config changed):\n  "
            + "\n  ".join(diffs[:10])
            + "\nRe-run the original command to resume it, or pass a new --out for this sweep."
        )
    return True


def _more_seeds(stored: Any, new: list[int]) -> bool:
    """``new`` is the stored seeds followed by more (each stored run keeps its name and seed)."""
    return isinstance(stored, list) and len(stored) < len(new) and new[: len(stored)] == stored


def read_plan(sweep_dir: Path) -> Any:
    """The JSON of ``sweep.json`` (None when absent; a RunDirError saying how to go on when it
    is damaged)."""
    return read_json(sweep_dir / PLAN_FILE, what="the sweep's plan", fix=PLAN_FIX)


def load_plan_record(sweep_dir: Path) -> dict[str, Any] | None:
    """``sweep.json`` of a sweep directory, or None when ``sweep_dir`` is not a sweep; a
    RunDirError when its jobs are not what ``build_plan`` writes, since every reader joins a
    job's name to the sweep directory (``_valid_job``)."""
    data = read_plan(Path(sweep_dir))
    if not (isinstance(data, dict) and "sweep_id" in data):
        return None
    jobs = data.get("jobs")
    if not isinstance(jobs, list) or not all(_valid_job(j) for j in jobs):
        raise RunDirError(
            f"{Path(sweep_dir) / PLAN_FILE}: its jobs are damaged (each needs a name, params and "
            "a seed); restore the file, or re-run the sweep command that made it"
        )
    return data


def _valid_job(job: object) -> bool:
    """A job with params, an integer seed and a folder name of one path component (never
    ``..`` or a path out of the sweep)."""
    if not isinstance(job, dict):
        return False
    name = job.get("name")
    plain = isinstance(name, str) and name not in ("", ".", "..") and Path(name).name == name
    seed = job.get("seed")
    return plain and isinstance(job.get("params"), dict) and type(seed) is int


def is_sweep_dir(path: Path) -> bool:
    return (Path(path) / PLAN_FILE).is_file()


__all__ = [
    "PLAN_FILE",
    "SUMMARY_FILE",
    "GridAxis",
    "RunJob",
    "SweepPlan",
    "build_plan",
    "check_or_write_plan",
    "is_sweep_dir",
    "load_plan_record",
    "parse_grid",
    "run_name",
    "split_values",
]
