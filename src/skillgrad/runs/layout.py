"""The run directory layout: every path skillgrad writes, in one place.

<output_root>/<run_name>/
  config.json           fully resolved config (secrets redacted)
  history.json          list of step records (see ``train/state.py: StepRecord``)
  runtime_state.json    resume checkpoint (atomic); re-running the same command resumes
  best_skill.md         highest selection-score skill: the deployable artifact
                        (a skill package: its SKILL.md; best_skill/ is the installable folder)
  skills/skill_v0000.md initial skill; skill_vNNNN.md = skill in force after step NNNN
                        (a package: its bundle text; skill_vNNNN/ the installable folder)
  steps/step_0001/      trajectories.jsonl, reflections.json, aggregate.json, selection.json,
                        candidate.md, apply_report.json, gate.json, leaks.json
  slow_update/epoch_02/ pairs.jsonl, categories.json, guidance.json, candidate.md, gate.json
  meta_skill/epoch_01/  inputs.json, memo.md
  patch_log.jsonl       every accepted edit with provenance
  conflicts.json        edits held back for human review
  events.jsonl          append-only log of everything that happened
  summary.json, report.md
  calls.sqlite          content-addressed call cache + ledger of paid calls
  splits.json           item ids per split; data_sha256.json: sha256 of each split's items
  run.lock              held by the one process writing the run (pid, host, start time)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from skillgrad.runs.lock import LOCK_NAME


@dataclass(frozen=True)
class RunPaths:
    root: Path

    @property
    def config(self) -> Path:
        return self.root / "config.json"

    @property
    def history(self) -> Path:
        return self.root / "history.json"

    @property
    def state(self) -> Path:
        return self.root / "runtime_state.json"

    @property
    def best_skill(self) -> Path:
        return self.root / "best_skill.md"

    @property
    def patch_log(self) -> Path:
        return self.root / "patch_log.jsonl"

    @property
    def conflicts(self) -> Path:
        return self.root / "conflicts.json"

    @property
    def events(self) -> Path:
        return self.root / "events.jsonl"

    @property
    def summary(self) -> Path:
        return self.root / "summary.json"

    @property
    def transfer(self) -> Path:
        """``skillgrad eval`` results of this run's skills in other setups (one JSON per line)."""
        return self.root / "transfer.jsonl"

    @property
    def report(self) -> Path:
        return self.root / "report.md"

    @property
    def report_html(self) -> Path:
        """``skillgrad report --html``'s page (its figures go to ``figures/``)."""
        return self.root / "report.html"

    @property
    def figures(self) -> Path:
        return self.root / "figures"

    @property
    def calls_db(self) -> Path:
        return self.root / "calls.sqlite"

    @property
    def splits(self) -> Path:
        return self.root / "splits.json"

    @property
    def data_digest(self) -> Path:
        return self.root / "data_sha256.json"

    @property
    def lock(self) -> Path:
        return self.root / LOCK_NAME

    def read_by_view(self) -> tuple[Path, ...]:
        """The files ``runs.view.load_run`` reads besides the skill versions and slow-update
        categories (the dashboard watches them to know when a run changed)."""
        return (self.config, self.history, self.summary, self.events, self.patch_log,
                self.best_skill)  # fmt: skip

    def skill_version(self, version: int) -> Path:
        return self.root / "skills" / f"skill_v{version:04d}.md"

    def step_dir(self, step: int) -> Path:
        return self.root / "steps" / f"step_{step:04d}"

    def slow_dir(self, epoch: int) -> Path:
        return self.root / "slow_update" / f"epoch_{epoch:02d}"

    def meta_dir(self, epoch: int) -> Path:
        return self.root / "meta_skill" / f"epoch_{epoch:02d}"


__all__ = ["RunPaths"]
