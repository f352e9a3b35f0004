"""The typed run configuration: YAML with ``_base_`` inheritance and ``--set`` overrides.

Sections follow method.md: train / models / env / hardware / budget (+ trackers). Every model is
``extra="forbid"``: an unknown key is an error that names the closest valid key.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import Any, Literal, NamedTuple, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from skillgrad.errors import ConfigError
from skillgrad.models.spec import ModelSpec, provider_names
from skillgrad.redact import redact_json
from skillgrad.safeparse import load_yaml


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TrainConfig(_Section):
    num_epochs: int = Field(
        2,
        ge=1,
        description="passes over the train split; raise it on a finished run to continue training",
    )
    steps_per_epoch: int | None = Field(
        None, ge=1, description="training steps per epoch (default: ceil(train items / batch_size))"
    )
    batch_size: int = Field(8, ge=1, description="train items rolled out per step")
    seed: int = Field(
        0, description="seed of batch sampling and every other random choice of the run"
    )
    init_skill: str = Field(
        "", description="the starting skill: '' (empty) or a path to a seed / pre-trained skill"
    )
    learning_rate: float = Field(
        4.0, gt=0, description="max edits applied per step (peak of the schedule)"
    )
    min_learning_rate: float = Field(
        1.0, gt=0, description="floor of the learning-rate schedule (edits per step)"
    )
    lr_scheduler: Literal["constant", "linear", "cosine"] = Field(
        "cosine", description="how the learning rate falls from learning_rate to min_learning_rate"
    )
    warmup_steps: int = Field(0, ge=0, description="steps of linear warm-up before the schedule")
    lr_decay_on_reject: float = Field(
        0.8, gt=0, le=1, description="factor applied to the learning rate after a rejected step"
    )
    patience: int = Field(
        6, ge=1, description="stop early after this many steps without a new best val score"
    )
    use_slow_update: bool = Field(
        True,
        description="from epoch 2, compare the last and current epoch's skill; add guidance",
    )
    slow_update_samples: int = Field(8, ge=1, description="train items the slow update compares on")
    slow_update_gate: bool = Field(
        True, description="gate the slow update's guidance on the val split like any edit"
    )
    use_meta_skill: bool = Field(
        True, description="keep an optimizer memo of what helped, revised each epoch"
    )
    failure_only: bool = Field(True, description="reflect on failed trajectories only")
    minibatch_size: int = Field(4, ge=1, description="trajectories per reflection call")
    max_edits_per_reflection: int = Field(4, ge=1, description="edits one reflection may propose")
    deep_reflect_threshold: float = Field(
        0.6,
        gt=0,
        le=1,
        description="batch failure rate above which a deep (systemic) reflection runs",
    )
    max_edit_tokens: int = Field(200, ge=1, description="longest edit content accepted, in tokens")
    merge_similarity: float = Field(
        0.85, gt=0, le=1, description="text similarity above which two edits are merged"
    )
    semantic_merge: bool = Field(
        True, description="the optimizer groups equivalent edits before selection"
    )
    rank_with_optimizer: bool = Field(
        True, description="the optimizer ranks candidate edits (else by support)"
    )
    rejected_buffer_size: int = Field(
        8, ge=0, description="rejected edits shown to the optimizer so it does not repeat them"
    )
    gate: bool = Field(
        True,
        description="accept a step only if the val split improves; False only via --no-gate "
        "(recorded in config and report)",
    )
    gate_min_delta: float = Field(
        0.0, ge=0, lt=1, description="accept only if the val mean improves by more than this"
    )
    gate_rule: Literal["strict", "paired"] = Field(
        "paired",
        description="strict: the candidate's val mean must be higher; paired: the one-sided "
        "lower confidence bound of the mean per-item difference must exceed gate_min_delta "
        "(exact sign-flip test; see docs/gate.md)",
    )
    gate_confidence: float = Field(
        0.9,
        gt=0.5,
        lt=1,
        description="confidence level of the paired rule's lower bound (and of the interval "
        "shown for every step's paired difference)",
    )
    samples_per_item: int = Field(
        1,
        ge=1,
        le=64,
        description="target samples per val item (distinct sampling seeds derived from seed; "
        "repeats at models.target.temperature), averaged per item",
    )
    optimizer_max_tokens: int = Field(600, ge=16, description="completion limit of optimizer calls")
    reject_leaks: bool = Field(
        False,
        description="refuse, before any target call, a candidate with new lines that copy "
        "train/val inputs or references verbatim (such lines are flagged in the step record, "
        "report and dashboard either way; see train/screens/leaks.py); a reflection "
        "reply with a copying "
        "rule is re-asked once, and a rule still copying is dropped before selection",
    )
    leak_ngram: int = Field(
        8,
        ge=4,
        le=64,
        description="words a skill line must share in a row with an item's input or reference "
        "to count as a copy (shorter items: their whole input next to their whole reference)",
    )
    check_targets: list[ModelSpec] = Field(
        default_factory=list,
        description="other target models ('provider:model' or a mapping, like models.target) "
        "the gate also evaluates a candidate on: a candidate losing more than "
        "check_targets_tolerance on any of them (val mean, against the incumbent on that "
        "target) is refused; each one's initial vs best test score is reported (docs/gate.md)",
    )
    check_targets_tolerance: float = Field(
        0.02,
        ge=0,
        lt=1,
        description="largest val-mean loss on a check target a candidate may have and still pass",
    )
    check_targets_rule: Literal["strict", "paired"] = Field(
        "paired",
        description="how a check target refuses: 'paired' when the exact sign-flip test is "
        "gate_confidence sure the candidate loses more than the tolerance (one item's noise "
        "does not refuse); 'strict' whenever its val mean loses more than the tolerance",
    )
    examples: Literal["off", "on"] = Field(
        "on",
        description="worked examples as an edit kind: each step may add one demonstration built "
        "by code from a train trajectory (its input and the passing reply, or a failed item's "
        "reference when the scorer passes it) to the skill's Examples section; gated like any "
        "edit; val/test items never appear (train/examples.py)",
    )
    command_forms: Literal["off", "on"] = Field(
        "on",
        description="after a step solves train episodes of an environment (the batch's passes "
        "and exploration's), one skill line lists the commands they typed, each object that "
        "differs between episodes as <object>; it joins the candidate beside the worked example "
        "and is gated with it (train/command_forms.py)",
    )
    parting: Literal["off", "on"] = Field(
        "off",
        description="with train.explore on, where a failed train episode and the attempt that "
        "solved it parted (after the commands both typed, the first each typed differently, as "
        "command forms) becomes one skill line by code, 'After `<command>`, type `<command>` "
        "(solved episodes did; failed ones typed `<command>`)', at most two per step, joining "
        "the candidate beside the worked example; screened, gated and pruned like any line "
        "(train/parting.py). Off by default: on Pecking Order with gold off (5 seeds each, the "
        "0.5B as check target) test gain off / on: the 1.5B +0.71 / +0.53, the 0.5B +0.38 / "
        "+0.35 (docs/results.md)",
    )
    max_examples: int = Field(
        3, ge=1, le=32, description="most worked examples the skill may hold (train.examples)"
    )
    max_example_tokens: int = Field(
        80,
        ge=8,
        description="longest worked example in tokens (its input is cut shorter to fit; the reply "
        "is shown whole or the example is not made)",
    )
    example_alone: bool = Field(
        True,
        description="when the gate rejects a candidate holding a worked example beside the "
        "step's rules, gate the example alone (one more gate; the rules go to the rejected "
        "buffer): rules a small optimizer writes beside a demonstration can contradict it",
    )
    explore: Literal["off", "on"] = Field(
        "on",
        description="exploration: for each failed train item of a step, the target tries again "
        "(train.explore_attempts times at most, stopping at the first pass) with sampling, a "
        "retry that sees its own failed attempt and the scorer's feedback, and what the task "
        "offers only at train time (an environment's valid actions); a passing attempt is "
        "offered as a worked example (train.examples) and shown to the optimizer beside the "
        "failed one (train/explore.py, train/contrast.py); never on val/test items",
    )
    contrast: Literal["off", "on"] = Field(
        "on",
        description="with train.explore on, one optimizer call per step shows each failed train "
        "item beside the attempt that passed it and asks for the rule that makes the difference "
        "(train/contrast.py); off: exploration's successes become worked examples and command "
        "forms only (an ablation switch)",
    )
    contrast_partial: Literal["off", "on"] = Field(
        "off",
        description="with train.explore on, a failed train item no attempt solved but one scored "
        "higher than its failure (a graded scorer's partial credit) is shown to the optimizer "
        "like a solved one: the lower-scoring attempt beside the higher one, asked for what the "
        "better attempt did better (train/contrast.py), and with train.command_forms on its "
        "commands up to where its score peaked join the command-forms line; off: only passing "
        "attempts are compared. "
        "Off by default: no sweep has shown it helps yet (docs/results.md)",
    )
    explore_resume: Literal["off", "on"] = Field(
        "on",
        description="with train.explore on, an environment episode's later attempt starts where "
        "the highest score an earlier failed attempt reached was first reached (a lost game may "
        "fall back to 0 after it): its route there (its commands up to there without the "
        "refused ones and its detours, checked by the environment) is replayed without a model "
        "call and the target goes on from that state (train/explore.py); an attempt that "
        "raises the item's highest score earns one more attempt, up to twice "
        "train.explore_attempts; a reply that repeats a command an earlier attempt lost points "
        "with after the same commands is drawn again, hotter (train/revisit.py). No effect on "
        "a task without episodes. On by default since Pecking Order gold off on fresh splits: "
        "with it, a success found in 5 of 5 runs and test +0.98 [0.96, 1.00]; without it, in 2 "
        "of 5 runs, +0.40 [-0.28, 1.00] (4 attempts each; docs/results.md)",
    )
    explore_attempts: int = Field(
        2,
        ge=1,
        le=8,
        description="most exploration attempts per failed train item and step (with "
        "train.explore_resume, attempts that raise the item's score earn more, up to twice this)",
    )
    explore_temperature: float = Field(
        0.7,
        ge=0,
        le=2,
        description="the target's sampling temperature during exploration (each attempt has its "
        "own seed derived from train.seed, the step, the item and the attempt)",
    )
    explore_temperature_step: float = Field(
        0.3,
        ge=0,
        le=1,
        description="added to the exploration temperature of an item's later attempts each time "
        "an attempt repeats an earlier failed one exactly (the same reply, or the same commands): "
        "a target that locks onto its own mistake samples wider, up to 2; 0 keeps it fixed",
    )
    revise: bool = Field(
        True,
        description="revise mode: when a step's rules only repeat lines the skill has, ask the "
        "optimizer to rewrite, merge or delete them (and build the revision from the expected "
        "reply form when it returns them unchanged); see train/revise.py",
    )
    reask_temperature: float = Field(
        0.7,
        ge=0,
        le=2,
        description="optimizer sampling temperature of the one re-ask after a reflection that "
        "only repeated rules the skill has or the gate rejected, or copied a train/val item "
        "(at temperature 0 a small model says the same again)",
    )
    noise_repeats: int = Field(
        2,
        ge=0,
        le=32,
        description="A/A passes of the initial skill on the val items before training (the "
        "baseline is the first) measuring the target's noise floor; 0 or 1: not measured "
        "(docs/gate.md, 'Noise floor')",
    )
    noise_calls: Literal["auto", "cached", "fresh"] = Field(
        "auto",
        description="how A/A repeats reach the target: 'cached' sends the baseline's own "
        "requests (the call cache answers: free, right for a deterministic target), 'fresh' "
        "gives each repeat its own sampling seed past the cache (paid: what a nondeterministic "
        "server or agent does); 'auto': cached for an in-process target, else fresh",
    )
    noise_gate: bool = Field(
        True,
        description="the gate refuses a mean val difference at or below the measured noise "
        "threshold (z(gate_confidence) x the A/A standard error of a paired difference)",
    )
    noise_remeasure: bool = Field(
        False,
        description="re-score the incumbent afresh at every gate, in the same round as the "
        "candidate (paid: one val pass per step; for nondeterministic targets)",
    )
    show_reference: bool = Field(
        True,
        description="show the optimizer each item's gold reference next to its input (never the "
        "target); safe by default: train/val references are not test data, a rule copying one "
        "is flagged (refused under reject_leaks), and a scorer's evidence is never shown. Off: "
        "withheld from every optimizer prompt, masked where feedback quotes it, and no example "
        "or built revision shows one (docs/gate.md)",
    )
    controls: bool = Field(
        False,
        description="after training, also score the empty skill and a placebo skill (the best "
        "skill's token length, no task content: skillgrad.train.trust.placebo) on the "
        "test split; the "
        "summary reports the best skill's gain over each (skillgrad sweep --controls)",
    )
    stop_at_ceiling: bool = Field(
        True,
        description="end training (status finished) once the val score reaches the reward "
        "ceiling (1.0) instead of spending patience on steps that cannot be accepted",
    )
    headroom_check: bool = Field(
        True,
        description="stop before any optimizer call (exit 2) when the val split is saturated "
        "or no achievable gain can pass the gate; off: --no-headroom-check",
    )
    line_screens: bool = Field(
        True,
        description="refuse, before selection, a proposed rule addressed to the grader or the "
        "feedback, naming a numbered step of one shown attempt ('in step 3') or an object some "
        "shown episodes hold and others do not, or naming what only one train item holds (a "
        "quoted letter, a number, a name in no other item nor the skill); a reply form holding "
        "one train item's answer is shown as <answer> (train/screens/specific.py)",
    )
    prune: Literal["off", "on"] = Field(
        "on",
        description="after the gate accepts a candidate, drop each new line whose removal "
        "changes no val item the candidate fixed, on the target or on any check target (only "
        "those items are re-scored, through the result cache); the pruned skill is committed "
        "(train/prune.py)",
    )
    adherence: Literal["off", "on"] = Field(
        "off",
        description="one optimizer call per step judges, on the step's train trajectories, how "
        "often each rule of the skill applied and was broken; shown in the report and "
        "summary, and the most broken rules go to revise mode (train/adherence.py). Off by "
        "default: it costs one optimizer call per step",
    )

    @field_validator("*", mode="before")
    @classmethod
    def _on_off(cls, v: Any, info: ValidationInfo) -> Any:
        # YAML reads a bare on / off as a boolean: every off/on switch takes it back
        name = info.field_name
        field = cls.model_fields.get(name) if name else None
        switch = field is not None and get_args(field.annotation) == ("off", "on")
        return ("on" if v else "off") if switch and isinstance(v, bool) else v

    @field_validator("check_targets", mode="before")
    @classmethod
    def _parse_check_targets(cls, v: Any) -> Any:
        if isinstance(v, (str, dict)):
            raise ValueError("expected a list of models, e.g. ['llamacpp:smollm2-135m']")
        return [ModelSpec.parse(x) if isinstance(x, str) else x for x in v] if v else []

    @model_validator(mode="after")
    def _schedule_falls(self) -> TrainConfig:
        if self.learning_rate < self.min_learning_rate:
            raise ValueError(
                f"learning_rate ({self.learning_rate:g}) is below min_learning_rate "
                f"({self.min_learning_rate:g}); the schedule falls from learning_rate to "
                "min_learning_rate: raise learning_rate or lower min_learning_rate"
            )
        return self


class ModelsConfig(_Section):
    optimizer: ModelSpec = Field(
        default_factory=ModelSpec,
        description="the model that reflects and proposes edits ('provider:model' or a mapping)",
    )
    target: ModelSpec = Field(
        default_factory=ModelSpec,
        description="the frozen model the skill is trained for ('provider:model' or a mapping)",
    )

    @field_validator("optimizer", "target", mode="before")
    @classmethod
    def _parse_spec(cls, v: Any) -> Any:
        return ModelSpec.parse(v) if isinstance(v, str) else v


class EnvConfig(_Section):
    task: str = Field(
        "quickstart", description="registered task name, or 'module:attr' / 'file.py:attr'"
    )
    options: dict[str, Any] = Field(
        default_factory=dict, description="the task's own options (see the task's docs)"
    )
    output_root: str = Field("runs", description="folder holding run directories")
    run_name: str | None = Field(
        None,
        description="run directory name (default: the config file's stem); characters awkward "
        "in paths become '-'",
    )


class HardwareConfig(_Section):
    rollout_workers: int = Field(4, ge=1, description="target calls in flight at once")
    analyst_workers: int = Field(2, ge=1, description="optimizer calls in flight at once")
    executor: Literal["local", "ray"] = Field(
        "local",
        description="where the heavy part of code, agent and environment rollouts runs: local "
        "(here) or ray (Ray tasks and actors; model calls, cache and budget stay here)",
    )
    ray_address: str | None = Field(
        None, description="Ray cluster to attach to (executor: ray); unset: a local cluster"
    )
    ray_num_cpus_per_rollout: float = Field(
        1.0, gt=0, description="CPUs one rollout's Ray task declares (executor: ray)"
    )


class BudgetConfig(_Section):
    max_cost_usd: float | None = Field(
        None, gt=0, description="stop cleanly when the run's priced cost reaches this"
    )
    max_tokens: int | None = Field(
        None, gt=0, description="stop cleanly at this many tokens (both roles)"
    )
    max_calls: int | None = Field(None, gt=0, description="stop cleanly at this many model calls")
    prices: dict[str, tuple[float, float]] = Field(
        default_factory=dict, description="'provider:model': [usd per 1M input, per 1M output]"
    )


class Config(_Section):
    train: TrainConfig = Field(
        default_factory=lambda: TrainConfig(), description="the training algorithm"
    )
    models: ModelsConfig = Field(
        default_factory=lambda: ModelsConfig(), description="the two model roles"
    )
    env: EnvConfig = Field(
        default_factory=lambda: EnvConfig(), description="the task and where runs go"
    )
    hardware: HardwareConfig = Field(
        default_factory=lambda: HardwareConfig(), description="parallelism"
    )
    budget: BudgetConfig = Field(
        default_factory=lambda: BudgetConfig(), description="limits and prices"
    )
    trackers: list[str] = Field(
        default_factory=list, description="experiment trackers: tensorboard | mlflow | wandb"
    )
    base_dir: str = Field(".", description="folder of the config file (relative paths)")

    def redacted_json(self) -> dict[str, Any]:
        return redact(self.model_dump(mode="json"))


class Retired(NamedTuple):
    """A setting a later version removed, carried at its neutral value until ``dropped_in``."""

    neutral: Any
    """The value that behaves as the version without the setting does."""
    why: str
    """Why it went and what to do instead."""
    dropped_in: str
    """The release from which a config, run or sweep holding it no longer loads."""


# The one list of retired settings: (section, key) -> Retired. A config, run or sweep holding
# one at its neutral value still loads and resumes; at any other value it is a ConfigError
# saying so. Each is deleted here in its ``dropped_in`` release.
RETIRED: dict[tuple[str, str], Retired] = {
    ("train", "candidates_per_step"): Retired(
        1,
        "removed: several candidates per step did not beat one where measured "
        "(docs/benchmarks.md, 'Several candidates per step'); delete the setting",
        "0.2.0",
    ),
    ("train", "candidate_temperature"): Retired(
        0.7,
        "renamed train.reask_temperature (the temperature of the one re-ask)",
        "0.2.0",
    ),
}


def drop_retired(raw: dict[str, Any], source: str = "<config>") -> dict[str, Any]:
    """``raw`` without the retired settings (``RETIRED``) that hold their neutral value; one
    holding another value is a ConfigError naming it, what became of it and the fix."""
    out = dict(raw)
    for (section, key), retired in RETIRED.items():
        block = out.get(section)
        if not isinstance(block, dict) or key not in block:
            continue
        if block[key] != retired.neutral:
            raise ConfigError(f"{source}: {section}.{key}: {block[key]!r}: {retired.why}")
        out[section] = {k: v for k, v in block.items() if k != key}
    return out


# The settings whose default changed: (section, key) -> the former default. A run or sweep
# recorded before the change ran with the former value: a stored config that lacks the key
# (it predates the setting) is read with it, and a resumed run whose config leaves the setting
# unset keeps the value its run directory recorded (``keep_run_settings``), never the new one.
FORMER_DEFAULTS: dict[tuple[str, str], Any] = {
    ("train", "gate_rule"): "strict",
    ("train", "examples"): "off",
    ("train", "explore"): "off",
    ("train", "explore_temperature_step"): 0.0,
    ("train", "command_forms"): "off",
    ("train", "explore_resume"): "off",
}


def with_former_defaults(stored: dict[str, Any]) -> dict[str, Any]:
    """A stored config (a run's config.json) with each setting whose default changed and that
    it lacks at its former default (``FORMER_DEFAULTS``): what that run ran with."""
    out = dict(stored)
    for (section, key), former in FORMER_DEFAULTS.items():
        block = out.get(section)
        if isinstance(block, dict) and key not in block:
            out[section] = {**block, key: former}
    return out


def kept_settings(cfg: Config, stored: dict[str, Any]) -> dict[str, Any]:
    """``{"section.key": value}``: each setting whose default changed (``FORMER_DEFAULTS``)
    that ``cfg`` leaves unset and the stored config of a run or sweep recorded at another
    value (``with_former_defaults``: one it lacks ran with the former default)."""
    stored = with_former_defaults(stored)
    out: dict[str, Any] = {}
    for section, key in FORMER_DEFAULTS:
        block, record = getattr(cfg, section), stored.get(section)
        if key in block.model_fields_set or not isinstance(record, dict) or key not in record:
            continue
        try:
            value = TypeAdapter(type(block).model_fields[key].annotation).validate_python(
                record[key]
            )
        except ValidationError:
            continue  # a damaged record: the comparison with the run refuses it by name
        if value != getattr(block, key):
            out[f"{section}.{key}"] = value
    return out


def keep_run_settings(cfg: Config, stored: dict[str, Any] | None) -> Config:
    """``cfg`` resuming the run whose config.json holds ``stored`` (None: a new run), with
    ``kept_settings``: a resumed run keeps the rule it started with when the config leaves it
    unset. A setting ``cfg`` sets stays (a different value is refused as a changed config)."""
    for dotted, value in kept_settings(cfg, stored or {}).items():
        section, key = dotted.split(".")
        block = getattr(cfg, section)
        cfg = cfg.model_copy(update={section: block.model_copy(update={key: value})})
    return cfg


def config_defaults() -> dict[str, Any]:
    """Every setting at its default, as JSON (what a resumed run or sweep compares a setting
    its stored config lacks with: one added by a later version), each setting whose default
    changed at its former default (``FORMER_DEFAULTS``: what such a stored config ran with), and
    each retired setting at its neutral value (one a stored config still has: removed by a later
    version)."""
    out = Config().redacted_json()
    for (section, key), former in FORMER_DEFAULTS.items():
        out[section][key] = former
    for (section, key), retired in RETIRED.items():
        out[section][key] = retired.neutral
    return out


def config_schema() -> dict[str, Any]:
    """The JSON schema of the config file (``skillgrad config --schema``)."""
    return Config.model_json_schema()


def config_markdown() -> str:
    """The config reference, generated from the schema: ``docs/config.md`` is exactly this text
    (``skillgrad config --markdown > docs/config.md``; a test keeps them in sync)."""
    lines = [
        "# Configuration reference",
        "",
        "Generated from the config schema by `skillgrad config --markdown` (do not edit by "
        "hand). A config is YAML; `_base_: other.yaml` inherits, `--set section.key=value` "
        "overrides, and an unknown key is an error naming the closest valid one. "
        "`skillgrad config --schema` prints the JSON schema (for editors).",
        "",
    ]
    sections: list[tuple[str, type[BaseModel]]] = [("top level", Config)]
    for name, field in Config.model_fields.items():
        ann = field.annotation
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            sections.append((name, ann))
    sections.append(("models.optimizer / models.target / each of train.check_targets", ModelSpec))
    for title, model in sections:
        lines += [f"## {title}", "", "| key | type | default | description |", "|---|---|---|---|"]
        for key, field in model.model_fields.items():
            ann = field.annotation
            if model is Config and isinstance(ann, type) and issubclass(ann, BaseModel):
                continue
            kind = _type_name(ann)
            default = "" if field.default_factory else json.dumps(field.default)
            if field.default_factory is not None:
                made = field.default_factory()  # type: ignore[call-arg]
                default = "" if isinstance(made, BaseModel) else json.dumps(made)
            desc = (field.description or "").replace("|", "\\|")
            lines.append(f"| `{key}` | {kind} | `{default}` | {desc} |")
        lines.append("")
    return "\n".join(lines)


def _type_name(ann: Any) -> str:
    text = ann.__name__ if isinstance(ann, type) else str(ann)
    text = re.sub(r"\b(?:[a-z_]+\.)+(?=[A-Za-z_])", "", text)  # skillgrad.models.spec.ModelSpec
    return text.replace("|", "or")


def redact(value: Any) -> Any:
    """A copy of a config's JSON with secrets replaced by ``***`` (``redact.redact_json``: by
    option name, key shape, URL password and known key values). Env var *names* stay."""
    return redact_json(value)


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
    data = load_yaml(path.read_text(encoding="utf-8"), str(path)) or {}
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
    if not raw.strip():
        return key.strip().split("."), ""
    try:
        return key.strip().split("."), load_yaml(raw, f"--set {text!r}")
    except ConfigError as exc:
        raise ConfigError(
            f"{exc}\nThe value after '=' is YAML: quote it to pass text, e.g. "
            f"--set '{key.strip()}=\"...\"'"
        ) from None


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
    raw = drop_retired(raw, source)
    try:
        cfg = Config.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(_explain(exc, source)) from None
    problems = check_target_problems(cfg)
    if problems:
        raise ConfigError("\n".join([f"{source}: invalid configuration", *problems]))
    return cfg


def check_target_problems(cfg: Config) -> list[str]:
    """What is wrong with ``train.check_targets`` (one line each; empty when nothing): an
    unknown provider, the main target itself, or the same ``provider:model`` twice — a model
    call's cache key holds that name, so two targets sharing it would share answers. (A
    ``function`` model names itself: there, only the same spec is refused here; the session
    checks the names its objects give.)"""
    known = provider_names()
    seen = {_identity(cfg.models.target): "the main target (models.target)"}
    out = []
    for i, spec in enumerate(cfg.train.check_targets):
        where = f"  train.check_targets[{i}]"
        if spec.provider not in known:
            close = difflib.get_close_matches(spec.provider, known, n=1, cutoff=0.5)
            hint = f" — did you mean {close[0]!r}?" if close else ""
            out.append(
                f"{where}: unknown model provider {spec.provider!r}{hint} Known providers: "
                f"{', '.join(known)}"
            )
        elif _identity(spec) in seen:
            out.append(
                f"{where}: {spec.name!r} is {seen[_identity(spec)]}; every check target must "
                "be another model (remove it or name a different one)"
            )
        seen.setdefault(_identity(spec), f"already train.check_targets[{i}]")
    return out


def _identity(spec: ModelSpec) -> str:
    """What makes two targets the same model: ``provider:model`` (the name in the call cache's
    keys), or for a ``function`` model, which names itself, the whole spec."""
    return spec.model_dump_json() if spec.provider == "function" else spec.name


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
    "check_target_problems",
    "config_defaults",
    "config_markdown",
    "config_schema",
    "keep_run_settings",
    "kept_settings",
    "load_config",
    "load_yaml",
    "redact",
    "validate_config",
    "with_former_defaults",
]
