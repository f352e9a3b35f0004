"""The records a run keeps: what each step decided (``StepRecord`` in history.json, its
``GateResult``, ``CheckResult``, ``Leak``), the rejected-edit buffer and conflicts of the
checkpoint, and the power check. Each is written with ``to_json`` and read back by its
``from_json``, the one validation path: a damaged field is a ``ValueError`` naming it (the run
directory's readers turn it into a ``RunDirError``); records written by earlier versions (fewer
fields) still read.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Literal

from skillgrad.types import Edit, to_json

# the main gate's rules (``train.gate_rule``) and the check targets' (``train/check_targets.py``)
GateRuleName = Literal["strict", "paired", "tolerance", "tolerance_paired"]


@dataclass(frozen=True)
class GateResult:
    """The gate's decision on one candidate (``train/gate.py``). Scores are means over the items
    both skills were scored on; the paired fields describe the per-item differences
    (candidate minus incumbent) whatever the rule, so an acceptance within noise is visible."""

    accepted: bool
    incumbent_score: float
    candidate_score: float
    evaluated: int
    total: int
    early_rejected: bool = False
    reason: str = ""
    rule: GateRuleName = "strict"
    """``train.gate_rule`` in force: ``strict`` or ``paired``."""
    confidence: float = 0.9
    """``train.gate_confidence``: the level of each end of the interval below."""
    paired_n: int = 0
    """Items scored by both skills (the paired differences)."""
    mean_diff: float | None = None
    """Mean paired difference (candidate minus incumbent); None when no pair."""
    diff_low: float | None = None
    """One-sided sign-flip lower bound of the mean difference at ``confidence`` (None after an
    early rejection: only part of the items was scored)."""
    diff_high: float | None = None
    """One-sided sign-flip upper bound of the mean difference at ``confidence``."""
    p_value: float | None = None
    """One-sided sign-flip p-value of ``mean difference <= gate_min_delta``."""
    missing: int = 0
    """Items left out for both skills: infrastructure failures (not scored as zero)."""
    fixed: tuple[str, ...] = ()
    """Items the candidate passes and the incumbent fails (fail->pass)."""
    broken: tuple[str, ...] = ()
    """Items the incumbent passes and the candidate fails (pass->fail)."""


StepKind = Literal["step", "slow_update"]


def _field_error(record: str, name: str, expected: str, value: Any) -> ValueError:
    return ValueError(
        f"{record} field {name!r}: expected {expected}, got {value!r} "
        "(the record is damaged; restore the file or re-run with --fresh)"
    )


def _number(record: str, name: str, value: Any, kind: type) -> Any:
    """``value`` as an int or float; bools and other types are refused."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _field_error(record, name, kind.__name__, value)
    if kind is int and not float(value).is_integer():
        raise _field_error(record, name, "int", value)
    return kind(value)


def _object(record: str, data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ValueError(f"{record}: expected a JSON object, got {type(data).__name__}")
    return data


def _edits(record: str, value: Any) -> tuple[Edit, ...]:
    if not isinstance(value, list):
        raise _field_error(record, "edits", "a list of edits", value)
    try:
        return tuple(Edit.from_json(_object(f"{record} edit", e)) for e in value)
    except KeyError as exc:
        raise ValueError(f"{record}: an edit has no {exc.args[0]!r}") from None


CheckVerdict = Literal["passed", "refused", "not evaluated"]


@dataclass(frozen=True)
class KeptLine:
    """A new line of an accepted candidate that the prune kept (``train/prune.py``): without it
    ``lowered`` of the ``fixed`` val items the candidate fixed on ``target`` (the run's target or
    a check target, ``provider:model``) scored lower. The first target that needs it is named:
    the run's target is asked first, then each check target in order."""

    line: str
    target: str
    lowered: int = 0
    fixed: int = 0
    check_target: bool = False
    """Whether ``target`` is one of ``train.check_targets`` (not the run's own target)."""

    @classmethod
    def from_json(cls, data: Any) -> KeptLine:
        return parse_record(cls, "kept-line record", data)


@dataclass(frozen=True)
class CheckResult:
    """A candidate on one check target (``train.check_targets``) against the incumbent on that
    target, over the val items (``train/check_targets.py``)."""

    target: str
    """The check target's ``provider:model``."""
    verdict: CheckVerdict
    """``passed``, ``refused`` (it loses more than the tolerance), or ``not evaluated`` (the
    candidate was refused on an earlier check target, or a better candidate of the step passed)."""
    incumbent_score: float | None = None
    """The incumbent's val mean on this target (the items both skills were scored on)."""
    candidate_score: float | None = None
    """The candidate's val mean on this target (the items it was evaluated on)."""
    mean_diff: float | None = None
    """Mean paired difference candidate minus incumbent on this target."""
    evaluated: int = 0
    """Val items the candidate was evaluated on (fewer than ``total`` after an early stop)."""
    total: int = 0
    """Val items."""
    early_rejected: bool = False
    """Whether the evaluation stopped as soon as the loss could no longer stay in tolerance."""
    missing: int = 0
    """Val items left out for both skills (infrastructure failures)."""
    reason: str = ""
    """Why, in words (``refused: loses 0.050 on llamacpp:smollm2-135m``)."""

    @classmethod
    def from_json(cls, data: Any) -> CheckResult:
        return parse_record(cls, "check-target record", data)


def parse_record(cls: Any, what: str, data: Any) -> Any:
    """The one way a run's record is read back from JSON: every field of the dataclass ``cls``
    checked against its declared type (numbers, text, flags, ``Literal`` choices, optional
    values, per-role objects, id lists, edits and nested records); a field absent from ``data``
    takes its default (records of earlier versions), unknown keys are ignored (fields a later
    version dropped). Raises ValueError naming the record, the field and what was expected."""
    d = _object(what, data)
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name not in d:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ValueError(f"{what}: required field {f.name!r} is missing")
            continue
        kwargs[f.name] = _value(what, f.name, d[f.name], hints[f.name])
    return cls(**kwargs)


def _value(what: str, name: str, value: Any, kind: Any) -> Any:
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):  # ``X | None``
        if value is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _value(what, name, value, inner)
    if origin is Literal:
        if value not in args:
            raise _field_error(what, name, " or ".join(map(repr, args)), value)
        return value
    if kind is bool or kind is str:
        if not isinstance(value, kind):
            raise _field_error(what, name, kind.__name__, value)
        return value
    if kind is int or kind is float:
        return _number(what, name, value, kind)
    if origin is dict:
        if not isinstance(value, dict):
            raise _field_error(what, name, "an object", value)
        return {str(k): _value(what, f"{name}.{k}", v, args[1]) for k, v in value.items()}
    if origin is tuple and args[0] is Edit:
        return _edits(what, value)
    if origin is tuple:
        if not isinstance(value, list):
            raise _field_error(what, name, "a list", value)
        return tuple(_value(what, f"{name}[{i}]", v, args[0]) for i, v in enumerate(value))
    if dataclasses.is_dataclass(kind):  # a nested record reads itself
        return typing.cast(Any, kind).from_json(value)
    raise TypeError(f"{what}: no reader for field {name!r} of type {kind!r}")


@dataclass(frozen=True)
class StepRecord:
    """One entry of ``history.json``: what one step (or slow update) did, decided and cost.

    Built once by ``train.state.advance``; read by the report, the dashboard, the trackers and
    the console. ``to_json``/``from_json`` are its only (de)serialisation; ``from_json`` accepts
    records written by earlier versions (missing fields take the defaults below).
    """

    step: int
    """Global step number (1-based); slow updates take a step number too."""
    epoch: int
    """Epoch the step belongs to (1-based)."""
    kind: StepKind
    """``"step"`` (a training step) or ``"slow_update"`` (the epoch-boundary update)."""
    lr: float = 0.0
    """Learning rate after rejection decay (0 for slow updates)."""
    k: int = 0
    """Edits allowed in this step (``round(lr)``, at least 1; 0 for slow updates)."""
    train_score: float = 0.0
    """Mean score of the rolled-out training batch under the skill in force."""
    n_failures: int = 0
    """Trajectories of the batch that did not pass."""
    n_reflections: int = 0
    """Optimizer reflection calls made (shallow and deep)."""
    n_failed_reflections: int = 0
    """Reflection calls whose reply failed validation twice (recorded, no edits)."""
    n_proposed: int = 0
    """Edits proposed by reflection."""
    n_merged: int = 0
    """Edits left after aggregation (lexical and semantic merge)."""
    n_conflicts: int = 0
    """Conflicting edit pairs held back for human review."""
    n_selected: int = 0
    """Edits kept by selection (at most ``k``)."""
    n_applied: int = 0
    """Selected edits that applied cleanly to the candidate skill."""
    accepted: bool = False
    """Whether the candidate became the skill in force."""
    gate_reason: str = ""
    """The gate's reason for its decision (or why the gate did not run)."""
    incumbent_score: float = 0.0
    """Selection score of the skill in force before the step, on the items the gate compared
    (the whole split, or after an early rejection the items evaluated)."""
    candidate_score: float | None = None
    """Selection-split score of the candidate (mean over the items evaluated); None if no gate."""
    gate_evaluated: int = 0
    """Selection items the gate evaluated (fewer than ``gate_total`` on early rejection)."""
    gate_total: int = 0
    """Selection items the gate would evaluate in full (0 when the gate did not run)."""
    early_rejected: bool = False
    """Whether the gate stopped early because the candidate could no longer win."""
    val_score: float = 0.0
    """Selection score of the skill in force after the step."""
    best_score: float = 0.0
    """Best selection score so far."""
    skill_version: int = 0
    """Version number of the skill in force after the step (equals ``step``)."""
    skill_tokens: int = 0
    """Length in tokens of the skill in force after the step."""
    candidate_tokens: int = 0
    """Length in tokens of the candidate skill."""
    no_gate: bool = False
    """Whether the run trains without the validation gate (``--no-gate``)."""
    calls: dict[str, int] = field(default_factory=dict)
    """Model calls of this step per role (``optimizer``, ``target``)."""
    tokens: dict[str, int] = field(default_factory=dict)
    """Prompt plus completion tokens of this step per role."""
    cost: dict[str, float] = field(default_factory=dict)
    """Cost in USD of this step per role."""
    cum_calls: int = 0
    """Model calls of the run so far (all roles)."""
    cum_cost: float = 0.0
    """Cost in USD of the run so far (all roles)."""
    timings: dict[str, float] = field(default_factory=dict)
    """Wall-clock seconds per stage (``rollout``, ``reflect``, ``gate``); never part of results."""
    gate_rule: GateRuleName | None = None
    """``train.gate_rule`` the gate decided under; None when no gate decided the step (no edit,
    a refusal before the gate, ``--no-gate``)."""
    mean_diff: float | None = None
    """Mean paired difference candidate minus incumbent on the val items both were scored on."""
    diff_low: float | None = None
    """Lower end of the interval of ``mean_diff`` (one-sided sign-flip bound, gate confidence)."""
    diff_high: float | None = None
    """Upper end of the interval of ``mean_diff`` (one-sided sign-flip bound, gate confidence)."""
    gate_missing: int = 0
    """Val items left out for both skills because of infrastructure failures."""
    fixed: tuple[str, ...] = ()
    """Val items this step's candidate flipped fail->pass."""
    broken: tuple[str, ...] = ()
    """Val items this step's candidate flipped pass->fail."""
    leaks: tuple[Leak, ...] = ()
    """Lines of this step's candidate that copy train/val data verbatim and were not in the skill
    in force before the step (``train/screens/leaks.py``); flagged whether or not the step was
    refused."""
    leak_refused: bool = False
    """Whether the candidate was refused for those leaks before any target call
    (``train.reject_leaks``)."""
    check_targets: tuple[CheckResult, ...] = ()
    """The candidate on each check target (``train.check_targets``); empty when none are
    configured or the main gate refused the candidate first."""
    stall_reason: str = ""
    """Why the step could not learn: every reflection failed validation (with the first
    error), or every proposed rule was dropped (and why); "" otherwise (``train/stall.py``)."""
    example_alone: bool = False
    """The gate rejected the step's rules beside its worked example, and the example was then
    gated alone (``train.example_alone``): the gate fields above are that second gate's."""
    pruned: tuple[str, ...] = ()
    """Lines of the accepted candidate removed after the gate because no val item it fixed
    depends on them (``train/prune.py``); the skill in force is the candidate without them."""
    prune_kept: tuple[KeptLine, ...] = ()
    """New lines of the accepted candidate the prune tried to remove and kept, each with the
    target whose fixed val items needed it (empty for a run written before it was recorded)."""
    explore_attempts: int = 0
    """Exploration attempts at the step's failed train items (``train.explore``)."""
    explore_found: int = 0
    """Failed train items of the step an exploration attempt solved (``train.explore``)."""
    explore_repeats: int = 0
    """Exploration attempts that repeated an earlier failed attempt at their item exactly."""
    explore_better: int = 0
    """Failed train items of the step no attempt solved but one scored higher than the failure
    (with ``train.contrast_partial`` on, shown to the optimizer beside it)."""
    explore_resumed: int = 0
    """Exploration attempts that replayed an earlier attempt's commands first
    (``train.explore_resume``)."""
    explore_redrawn: int = 0
    """Exploration replies drawn again past a command an earlier attempt lost points with
    (``train.explore_resume``)."""
    explore_ends: dict[str, int] = field(default_factory=dict)
    """How many exploration attempts ended each way: solved, out of steps, the context window
    full, … (keys of ``tasks.episode.ENDS``; a chat task's: ``solved``, ``unsolved``,
    ``error``)."""
    explore_fell: int = 0
    """Unsolved exploration attempts that ended below a score they had reached (they lost
    points they had won)."""

    @property
    def verdict(self) -> str:
        """How the step ended: accepted, refused for copying data or for a loss on a check
        target, (early-)rejected by the gate, or nothing to gate; "(the example alone)" when
        the rules beside the step's worked example were rejected first."""
        alone = " (the example alone)" if self.example_alone else ""
        if self.accepted:
            return "accepted" + alone
        if self.leak_refused:
            return "refused (leak)"
        refusal = next((c for c in self.check_targets if c.verdict == "refused"), None)
        if refusal is not None:
            return refusal.reason
        if self.early_rejected:
            return "early-rejected" + alone
        if self.stall_reason:
            return "could not learn"
        return "rejected" + alone if self.gate_evaluated else "no edit applied"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = to_json(self)
        return data

    @classmethod
    def from_json(cls, data: Any) -> StepRecord:
        """Parse one history entry; raises ValueError naming the bad field."""
        return parse_record(cls, "step record", data)


LeakSource = Literal["input", "reference", "input+reference", "evidence"]


@dataclass(frozen=True)
class Leak:
    """One skill line that copies train/val data verbatim (``train/screens/leaks.py`` finds these).

    ``source`` says what was copied: a span of an item's ``input``, of its ``reference`` (gold
    answer), or — for items whose input and reference are both short — the whole input next to
    the whole reference (a lookup-table entry).
    """

    file: str
    """File of a skill package the line is in (``SKILL.md``, ``references/x.md``); ``""`` for a
    single-file skill."""
    line: int
    """Line number (1-based) within that file."""
    span: str
    """The copied text as it appears in the skill line."""
    item_id: str
    """Item whose data the span copies (the first such item when several share it)."""
    split: str
    """Split of that item: ``train`` or ``val``."""
    source: LeakSource
    """``input``, ``reference``, ``input+reference``, or ``evidence`` (a scorer's evidence:
    ``train/screens/firewall.py``)."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = to_json(self)
        return data

    @classmethod
    def from_json(cls, data: Any) -> Leak:
        """Parse one leak record; raises ValueError naming the bad field."""
        return parse_record(cls, "leak record", data)


@dataclass(frozen=True)
class RejectedEdit:
    """The applied edits of one candidate the gate rejected, with the scores that decided it.

    A bounded buffer of these (``train.rejected_buffer_size``) is shown to reflection so the
    optimizer does not propose the same change again.
    """

    step: int
    """Step whose candidate was rejected."""
    edits: tuple[Edit, ...]
    """The edits that were applied to the rejected candidate."""
    incumbent: float
    """Selection score of the skill in force (the bar the candidate had to clear)."""
    candidate: float
    """Selection score the candidate reached."""
    refused: str = ""
    """Why the candidate was refused without evaluation (``""``: the gate scored it); e.g. it
    copied train/val data verbatim (``train.reject_leaks``)."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = to_json(self)
        return data

    @classmethod
    def from_json(cls, data: Any) -> RejectedEdit:
        return parse_record(cls, "rejected-edit entry", data)


@dataclass(frozen=True)
class Conflict:
    """Two edits of one step that change the same rule in opposite directions.

    Neither is applied; both go to ``conflicts.json`` for human review.
    """

    step: int
    """Step whose reflection proposed the edits."""
    edits: tuple[Edit, ...]
    """The opposing edits (two)."""
    reason: str
    """Why they conflict (e.g. ``"opposite changes"``)."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = to_json(self)
        return data

    @classmethod
    def from_json(cls, data: Any) -> Conflict:
        return parse_record(cls, "conflict entry", data)


POWER_MAX_ITEMS = 2000  # the power check searches validation sizes up to this


@dataclass(frozen=True)
class PowerCheck:
    """What improvement the gate can detect on a selection split (``train/trust/power.py``)."""

    rule: str
    confidence: float
    min_delta: float
    n_items: int
    baseline: float
    min_gain: float | None
    min_items_flipped: int | None
    items_needed: dict[str, int | None] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "confidence": self.confidence,
            "min_delta": self.min_delta,
            "n_items": self.n_items,
            "baseline": self.baseline,
            "min_gain": self.min_gain,
            "min_items_flipped": self.min_items_flipped,
            "items_needed": dict(self.items_needed),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> PowerCheck:
        """From ``to_json`` (or a ``power_check`` event, whose extra keys are ignored)."""
        return parse_record(cls, "power check", d)

    def line(self) -> str:
        """One line for the console and the report."""
        if self.min_gain is None:
            smallest = "no improvement can pass the gate on this split"
        else:
            smallest = (
                f"smallest detectable gain {self.min_gain:+.3f} "
                f"({self.min_items_flipped} of {self.n_items} items fail->pass, none worse)"
            )
        needs = ", ".join(
            f"{float(e):+.2f} needs {'>' + str(POWER_MAX_ITEMS) if n is None else n} items"
            for e, n in self.items_needed.items()
        )
        return f"power check ({self.rule}, val {self.n_items} items): {smallest}; {needs}"
