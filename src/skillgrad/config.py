"""The typed run configuration: YAML with ``_base_`` inheritance and ``--set`` overrides.

Sections follow method.md: train / models / env / hardware / budget (+ trackers). Every model is
``extra="forbid"``: an unknown key is an error that names the closest valid key.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from skillgrad.errors import ConfigError
from skillgrad.models.spec import ModelSpec


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TrainConfig(_Section):
    num_epochs: int = Field(2, ge=1)
    steps_per_epoch: int | None = Field(None, ge=1, description="default: ceil(train / batch)")
    batch_size: int = Field(8, ge=1)
    seed: int = 0
    init_skill: str = Field("", description="'' (empty), or a path to a seed / pre-trained skill")
    learning_rate: float = Field(4.0, gt=0, description="max edits applied per step")
    min_learning_rate: float = Field(1.0, gt=0)
    lr_scheduler: Literal["constant", "linear", "cosine"] = "cosine"
    warmup_steps: int = Field(0, ge=0)
    lr_decay_on_reject: float = Field(0.8, gt=0, le=1)
    patience: int = Field(6, ge=1)
    use_slow_update: bool = True
    slow_update_samples: int = Field(8, ge=1)
    slow_update_gate: bool = True
    use_meta_skill: bool = True
    failure_only: bool = True
    minibatch_size: int = Field(4, ge=1)
    max_edits_per_reflection: int = Field(4, ge=1)
    deep_reflect_threshold: float = Field(0.6, gt=0, le=1)
    max_edit_tokens: int = Field(200, ge=1)
    merge_similarity: float = Field(0.85, gt=0, le=1)
    semantic_merge: bool = Field(True, description="optimizer groups equivalent edits")
    rank_with_optimizer: bool = True
    rejected_buffer_size: int = Field(8, ge=0)
    gate: bool = Field(True, description="False only via --no-gate; recorded in config + report")
    gate_min_delta: float = Field(
        0.0, ge=0, lt=1, description="accept only if the val mean improves by more than this"
    )
    optimizer_max_tokens: int = Field(600, ge=16)


class ModelsConfig(_Section):
    optimizer: ModelSpec = Field(default_factory=ModelSpec)
    target: ModelSpec = Field(default_factory=ModelSpec)

    @field_validator("optimizer", "target", mode="before")
    @classmethod
    def _parse_spec(cls, v: Any) -> Any:
        return ModelSpec.parse(v) if isinstance(v, str) else v


class EnvConfig(_Section):
    task: str = "quickstart"
    options: dict[str, Any] = Field(default_factory=dict)
    output_root: str = "runs"
    run_name: str | None = None


class HardwareConfig(_Section):
    rollout_workers: int = Field(4, ge=1)
    analyst_workers: int = Field(2, ge=1)
    executor: Literal["local"] = "local"


class BudgetConfig(_Section):
    max_cost_usd: float | None = Field(None, gt=0)
    max_tokens: int | None = Field(None, gt=0)
    max_calls: int | None = Field(None, gt=0)
    prices: dict[str, tuple[float, float]] = Field(
        default_factory=dict, description="'provider:model': [usd per 1M input, per 1M output]"
    )


class Config(_Section):
    train: TrainConfig = Field(default_factory=lambda: TrainConfig())
    models: ModelsConfig = Field(default_factory=lambda: ModelsConfig())
    env: EnvConfig = Field(default_factory=lambda: EnvConfig())
    hardware: HardwareConfig = Field(default_factory=lambda: HardwareConfig())
    budget: BudgetConfig = Field(default_factory=lambda: BudgetConfig())
    trackers: list[str] = Field(default_factory=list, description="tensorboard | mlflow | wandb")
    base_dir: str = Field(".", description="folder of the config file (relative paths)")

    def redacted_json(self) -> dict[str, Any]:
        return redact(self.model_dump(mode="json"))


_SECRET_WORDS = ("api_key", "apikey", "secret", "token", "password", "authorization")


def redact(value: Any, key: str = "") -> Any:
    """Replace secret-looking values (by key name or by shape) with '***'. Env var *names* stay."""
    if isinstance(value, dict):
        return {k: redact(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, key) for v in value]
    lowered = key.lower()
    is_name = lowered.endswith("_env") or lowered.endswith("_tokens") or lowered.startswith("max_")
    secret = any(w in lowered for w in _SECRET_WORDS)
    if isinstance(value, str) and value and not is_name and (secret or _looks_like_key(value)):
        return "***"
    return value


def _looks_like_key(text: str) -> bool:
    return text.startswith(("sk-", "sk_", "Bearer ")) and len(text) > 12


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _deep_merge(out[k], v)
        else:
            out[k] = v
    return out


def _read_yaml(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    path = path.resolve()
    if path in seen:
        raise ConfigError(f"_base_ cycle: {' -> '.join(str(p) for p in (*seen, path))}")
    if not path.exists():
        raise ConfigError(f"config file {path} does not exist")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: top level must be a mapping of sections")
    bases = data.pop("_base_", [])
    merged: dict[str, Any] = {}
    for base in [bases] if isinstance(bases, str) else bases:
        merged = _deep_merge(merged, _read_yaml(path.parent / base, (*seen, path)))
    return _deep_merge(merged, data)


def parse_override(text: str) -> tuple[list[str], Any]:
    """``"train.learning_rate=8"`` -> (["train", "learning_rate"], 8). Values are YAML."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {text!r}: expected section.key=value, e.g. train.batch_size=4")
    return key.strip().split("."), yaml.safe_load(raw) if raw.strip() else ""


def apply_override(data: dict[str, Any], path: list[str], value: Any) -> None:
    node = data
    for part in path[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"--set {'.'.join(path)}: {part!r} is not a section")
    node[path[-1]] = value


def load_config(
    path: str | Path | None = None,
    overrides: list[str] | None = None,
    data: dict[str, Any] | None = None,
) -> Config:
    """Load YAML (with ``_base_``), apply ``--set`` overrides, validate strictly."""
    raw: dict[str, Any] = _read_yaml(Path(path)) if path else {}
    if data:
        raw = _deep_merge(raw, data)
    for item in overrides or []:
        apply_override(raw, *parse_override(item))
    if path and "base_dir" not in raw:
        raw["base_dir"] = str(Path(path).resolve().parent)
    return validate_config(raw, source=str(path or "<config>"))


def validate_config(raw: dict[str, Any], source: str = "<config>") -> Config:
    try:
        return Config.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_explain(exc, source)) from None


def _explain(exc: ValidationError, source: str) -> str:
    lines = [f"{source}: invalid configuration"]
    for err in exc.errors():
        loc = [str(p) for p in err["loc"]]
        where = ".".join(loc)
        if err["type"] == "extra_forbidden":
            lines.append(f"  unknown key '{where}'{_did_you_mean(loc)}")
        else:
            lines.append(
                f"  {where}: {err['msg']} (got {json.dumps(err.get('input'), default=str)})"
            )
    return "\n".join(lines)


def _did_you_mean(loc: list[str]) -> str:
    model: type[BaseModel] = Config
    for part in loc[:-1]:
        field = model.model_fields.get(part)
        ann = getattr(field, "annotation", None)
        if not (isinstance(ann, type) and issubclass(ann, BaseModel)):
            return ""
        model = ann
    valid = list(model.model_fields)
    close = difflib.get_close_matches(loc[-1], valid, n=1, cutoff=0.5)
    if close:
        return f" — did you mean '{'.'.join([*loc[:-1], close[0]])}'?"
    return f" — valid keys here: {', '.join(valid)}"


__all__ = [
    "BudgetConfig",
    "Config",
    "EnvConfig",
    "HardwareConfig",
    "ModelsConfig",
    "TrainConfig",
    "load_config",
    "redact",
    "validate_config",
]
