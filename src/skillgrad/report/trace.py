"""What the target did on one item under a skill version (``skillgrad trace``).

The step files keep a gate's per-item scores, not what the target typed; the run's result cache
(``calls.sqlite``, table ``results``) keeps every scored trajectory by (skill hash, item id). So
"why did the candidate not move this val episode?" is answered by reading it back: by default the
initial and the best skill; with a step, the skill it started from, its candidate (what its gate
scored) and, when the prune changed it, what it committed. A check target's rollouts are read
with its model name. Nothing is re-run and nothing is written: the cache is opened read-only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from skillgrad.errors import RunDirError
from skillgrad.report.provenance import skill_at
from skillgrad.runs.cache import sample_key, stored_result, target_key
from skillgrad.runs.io import read_text
from skillgrad.runs.view import RunData, load_run, read_splits
from skillgrad.skill.document import skill_hash
from skillgrad.types import Trajectory

NOT_SCORED = (
    "not scored under this skill: the gate stops scoring a candidate once its verdict is "
    "decided (docs/gate.md), a step refused before evaluation scores nothing, and train items "
    "are rolled out under the skill in force only"
)


@dataclass(frozen=True)
class Traced:
    """One skill version's rollout of the item: ``trajectory`` None when the run never scored
    the item under that skill."""

    label: str
    skill_hash: str
    trajectory: Trajectory | None


def trace_item(
    run_dir: Path,
    item_id: str,
    *,
    step: int | None = None,
    target: str | None = None,
    sample: int = 0,
) -> list[Traced]:
    """The item's stored rollouts under the versions ``step`` names (None: initial and best),
    on the run's own target or on check target ``target`` (its ``provider:model`` name)."""
    run = load_run(run_dir)
    split = split_of(run, item_id)
    if sample < 0:
        raise RunDirError(f"sample must be >= 0, got {sample}")
    if target is not None:
        check_target_named(run, target)
    cache_id = sample_key(item_id, sample)
    out = []
    for label, text in versions(run, step):
        h = skill_hash(text)
        key = h if target is None else target_key(target, h)
        found = stored_result(run.paths.calls_db, key, cache_id)
        out.append(Traced(f"{split} item {item_id} under {label}", h, found))
    return out


def split_of(run: RunData, item_id: str) -> str:
    """The split holding ``item_id`` (``splits.json``); a RunDirError naming the splits when no
    split holds it."""
    splits = read_splits(run.root)
    for name in ("train", "val", "test"):
        ids = splits.get(name)
        if isinstance(ids, list) and item_id in ids:
            return name
    sizes = ", ".join(
        f"{name}: {len(ids)} ({ids[0]} …)"
        for name, ids in splits.items()
        if isinstance(ids, list) and ids
    )
    raise RunDirError(
        f"{item_id!r} is not an item of {run.root} ({run.paths.splits.name}: "
        f"{sizes or 'absent or empty'}); pass an id from the run's splits"
    )


def check_target_named(run: RunData, target: str) -> None:
    """A RunDirError unless ``target`` names one of the run's check targets
    (``check_target_names``)."""
    names = check_target_names(run)
    if target not in names:
        known = ", ".join(sorted(names)) if names else "none: the run has no train.check_targets"
        raise RunDirError(
            f"--target {target}: not a check target of {run.root} ({known}); the run's own "
            "target is traced without --target"
        )


def check_target_names(run: RunData) -> set[str]:
    """The names the run's check targets answered under, as its records hold them (a check
    verdict, a test score); before any is recorded, the ``provider:model`` of each
    ``train.check_targets`` entry (a backend may answer under another name, e.g. a function's)."""
    names = {c.target for r in run.history for c in r.check_targets}
    checks = (run.summary or {}).get("check_targets")
    rows = checks.get("targets") if isinstance(checks, dict) else None
    names |= {str(row["target"]) for row in rows or [] if isinstance(row, dict) and "target" in row}
    if names:
        return names
    train = run.config.get("train")
    specs = train.get("check_targets") if isinstance(train, dict) else None
    return {f"{s.get('provider')}:{s.get('model')}" for s in specs or [] if isinstance(s, dict)}


def versions(run: RunData, step: int | None) -> list[tuple[str, str]]:
    """(label, skill text) of each version to trace: initial and best, or step ``step``'s
    starting skill, candidate and (when the prune changed the candidate) committed skill."""
    if step is None:
        initial, _ = skill_at(run, 0)
        best, _ = skill_at(run, None)
        v = run.best_version()
        return [("the initial skill", initial), (f"the best skill (v{v or 0:04d})", best)]
    if step < 1:
        raise RunDirError(f"--step must be >= 1 (step 0 is the initial skill), got {step}")
    path = run.paths.step_dir(step) / "candidate.md"
    if not path.is_file():
        raise RunDirError(
            f"{path}: step {step} wrote no candidate (no such step, or it is still running); "
            "`skillgrad report` lists the run's steps"
        )
    start, start_label = skill_at(run, step - 1)
    candidate = read_text(path)
    out = [
        (f"the skill in force after {start_label}, which step {step} started from", start),
        (f"step {step}'s candidate", candidate),
    ]
    committed = run.skills.get(step)
    if committed is not None and committed != candidate:
        out.append((f"the skill step {step} committed (pruned after its gate)", committed))
    return out


__all__ = ["NOT_SCORED", "Traced", "trace_item"]
