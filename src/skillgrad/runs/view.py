"""A typed, read-only loader of a run directory (see docs/run-directory.md).

Every viewer (HTML report, diff/blame, compare, dashboard) reads runs through ``load_run`` so a
run still being written (no summary yet, a torn last JSONL line) is shown as far as it exists.
The sweep and the trackers read single files of a finished run through the small readers below
(``read_summary``, ``read_history``...): no module outside ``runs/`` opens a run's files itself.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillgrad.errors import RunDirError
from skillgrad.runs.integrity import check_no_links
from skillgrad.runs.io import read_json, read_jsonl, read_text
from skillgrad.runs.layout import RunPaths
from skillgrad.runs.records import StepRecord
from skillgrad.skill.document import Skill

_VERSION_RE = re.compile(r"skill_v(\d+)\.md$")
_EPOCH_RE = re.compile(r"epoch_(\d+)$")
# Files whose absence a reader should be told about (the rest are optional by design).
EXPECTED_FILES = ("config.json", "history.json", "events.jsonl", "best_skill.md", "summary.json")


@dataclass(frozen=True)
class RunData:
    """Everything the viewers need from one run directory, loaded once."""

    root: Path
    config: dict[str, Any]
    history: list[StepRecord]
    summary: dict[str, Any] | None
    patch_log: list[dict[str, Any]]
    events: list[dict[str, Any]]
    skills: dict[int, str]
    best_skill: str | None
    slow_categories: dict[int, dict[str, Any]] = field(default_factory=dict)
    missing: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return str(self.config.get("run_name") or self.root.name)

    @property
    def paths(self) -> RunPaths:
        return RunPaths(self.root)

    @property
    def status(self) -> str:
        """``summary.status`` when finished, else ``running`` (or ``empty`` before step 1)."""
        if self.summary:
            return str(self.summary.get("status", "finished"))
        return "running" if self.history or self.events else "empty"

    @property
    def best_score(self) -> float | None:
        return self.history[-1].best_score if self.history else None

    @property
    def initial_skill(self) -> str | None:
        return self.skills.get(0)

    def best_version(self) -> int | None:
        """summary.best_version, else the version whose text is best_skill.md, else the last."""
        if self.summary and self.summary.get("best_version") is not None:
            return int(self.summary["best_version"])
        for v in sorted(self.skills, reverse=True):
            if self.best_skill is not None and self.skills[v] == self.best_skill:
                return v
        return max(self.skills) if self.skills else None


def parse_history(rows: Any, where: str) -> list[StepRecord]:
    """Step records from the JSON list of ``history.json`` (or ``step_end`` events).

    Raises RunDirError naming ``where`` and the entry when a record is damaged.
    """
    if not isinstance(rows, list):
        raise RunDirError(f"{where}: expected a JSON list of step records.")
    out = []
    for i, row in enumerate(rows):
        try:
            out.append(StepRecord.from_json(row))
        except ValueError as exc:
            raise RunDirError(f"{where}: entry {i}: {exc}") from None
    return out


def load_history(path: Path) -> list[StepRecord]:
    """``history.json`` as step records ([] when absent); damaged files are a RunDirError."""
    return parse_history(read_json(path, what="the step history") or [], str(path))


def load_skills(paths: RunPaths) -> dict[int, str]:
    """All ``skills/skill_vNNNN.md`` files by version number."""
    out: dict[int, str] = {}
    skills_dir = paths.root / "skills"
    if skills_dir.is_dir():
        for p in skills_dir.iterdir():
            m = _VERSION_RE.search(p.name)
            if m:
                out[int(m.group(1))] = read_text(p)
    return dict(sorted(out.items()))


def load_slow_categories(paths: RunPaths) -> dict[int, dict[str, Any]]:
    """``slow_update/epoch_XX/categories.json`` by epoch: ``{"counts": {...}, "items": {...}}``."""
    out: dict[int, dict[str, Any]] = {}
    slow = paths.root / "slow_update"
    if slow.is_dir():
        for d in slow.iterdir():
            m = _EPOCH_RE.search(d.name)
            data = read_json(d / "categories.json", what="slow-update categories")
            if m and isinstance(data, dict):
                out[int(m.group(1))] = data
    return dict(sorted(out.items()))


def is_run_dir(path: Path) -> bool:
    """A directory looks like a run when it has a config, history or events file."""
    p = RunPaths(path)
    return path.is_dir() and (p.config.exists() or p.history.exists() or p.events.exists())


def load_run(run_dir: Path) -> RunData:
    """Load a run directory; raises RunDirError when it is missing or not a run at all."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise RunDirError(f"{run_dir}: no such run directory; pass the path of a run folder.")
    if not is_run_dir(run_dir):
        raise RunDirError(
            f"{run_dir}: not a skillgrad run directory (no config.json, history.json or "
            "events.jsonl); pass <output_root>/<run_name>."
        )
    check_no_links(run_dir)  # a planted link would show a file from elsewhere as the run's
    paths = RunPaths(run_dir)
    history = load_history(paths.history)
    best = read_text(paths.best_skill) if paths.best_skill.exists() else None
    if (run_dir / "best_skill").is_dir():  # a skill package: every file, as the versions hold it
        best = Skill.load(run_dir / "best_skill").text
    return RunData(
        root=run_dir,
        config=read_json(paths.config, what="the run config") or {},
        history=history,
        summary=read_json(paths.summary, what="the run summary"),
        patch_log=read_jsonl(paths.patch_log),
        events=read_jsonl(paths.events),
        skills=load_skills(paths),
        best_skill=best,
        slow_categories=load_slow_categories(paths),
        missing=tuple(f for f in EXPECTED_FILES if not (run_dir / f).exists()),
    )


def step_details(run_dir: Path, step: int) -> dict[str, Any]:
    """selection.json, apply_report.json and gate.json of one step (absent ones are None)."""
    d = RunPaths(run_dir).step_dir(step)
    return {
        name: read_json(d / f"{name}.json", what=f"step {step} {name}")
        for name in ("selection", "apply_report", "gate", "aggregate")
    }


def read_summary(run_dir: Path) -> dict[str, Any] | None:
    """``summary.json``: None until the run ended (or when it holds no JSON object)."""
    summary = read_json(RunPaths(run_dir).summary)
    return summary if isinstance(summary, dict) else None


def read_history(run_dir: Path) -> list[StepRecord]:
    """``history.json`` as step records ([] before step 1); a damaged record is a RunDirError."""
    return load_history(RunPaths(run_dir).history)


def read_patch_log(run_dir: Path) -> list[dict[str, Any]]:
    """``patch_log.jsonl``: one row per accepted edit (a torn last line is left out)."""
    return [row for row in read_jsonl(RunPaths(run_dir).patch_log) if isinstance(row, dict)]


def read_transfer(run_dir: Path) -> list[dict[str, Any]]:
    """``transfer.jsonl``: the run's skills scored in other setups; a damaged line (not the
    last) is a RunDirError."""
    return [row for row in read_jsonl(RunPaths(run_dir).transfer) if isinstance(row, dict)]


def read_splits(run_dir: Path) -> dict[str, Any]:
    """``splits.json``: item ids by split ({} when absent)."""
    splits = read_json(RunPaths(run_dir).splits)
    return splits if isinstance(splits, dict) else {}


def read_config(run_dir: Path) -> dict[str, Any]:
    """``config.json``: the run's resolved config ({} when absent or not an object)."""
    config = read_json(RunPaths(run_dir).config)
    return config if isinstance(config, dict) else {}


_MAX_EVENT_LINE = 1 << 20
"""An events line longer than this is not read for its time (a run's config event is ~10 kB)."""


def run_minutes(run_dir: Path) -> float | None:
    """Minutes the run ran (``events.jsonl``): per session (each ``run_start`` begins one), its
    last event's time minus its first, summed, so a run resumed later does not count the time
    it lay stopped. None when the file is missing or holds no timed event; lines that are not a
    JSON object with an ISO time ``t`` (with its zone) are skipped."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:  # a planted link (ELOOP) would time a file from elsewhere as the run's
        fh = os.fdopen(os.open(RunPaths(run_dir).events, flags), "rb")
    except OSError:
        return None
    sessions: list[list[_dt.datetime]] = []
    with fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):  # a FIFO would block
            return None
        while raw := fh.readline(_MAX_EVENT_LINE + 1):  # a line is read this far at most
            if len(raw) > _MAX_EVENT_LINE:
                while raw and not raw.endswith(b"\n"):  # the rest of the long line
                    raw = fh.readline(_MAX_EVENT_LINE + 1)
                continue
            try:
                row = json.loads(raw)
                when = _dt.datetime.fromisoformat(row["t"])
            except (ValueError, TypeError, KeyError, RecursionError):
                continue
            if when.tzinfo is None:
                continue
            if row.get("event") == "run_start" or not sessions:
                sessions.append([when, when])
            else:
                sessions[-1][1] = max(sessions[-1][1], when)
    if not sessions:
        return None
    return sum((end - start).total_seconds() for start, end in sessions) / 60.0


def committed_skills(run_dir: Path) -> tuple[str, str]:
    """The initial and best skill texts the run committed (``runtime_state.json``; a package:
    its bundle). RunDirError when the file is missing or damaged: a finished run has it."""
    paths = RunPaths(run_dir)
    state = read_json(paths.state)
    if not isinstance(state, dict) or not {"initial_skill", "best_skill"} <= set(state):
        raise RunDirError(
            f"{paths.state}: missing or damaged in a finished run; "
            "restore it or remove the run directory and re-run the sweep"
        )
    return str(state["initial_skill"]), str(state["best_skill"])


def best_skill_file(run_dir: Path) -> Path | None:
    """``best_skill.md`` when the run wrote one (a tracker uploads it as an artifact)."""
    best = RunPaths(run_dir).best_skill
    return best if best.exists() else None


def list_runs(root: Path) -> list[Path]:
    """Run directories directly under ``root`` (or ``root`` itself if it is a run)."""
    root = Path(root)
    if is_run_dir(root):
        return [root]
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if is_run_dir(p))


__all__ = [
    "RunData",
    "best_skill_file",
    "committed_skills",
    "is_run_dir",
    "list_runs",
    "load_history",
    "load_run",
    "load_skills",
    "load_slow_categories",
    "parse_history",
    "read_config",
    "read_history",
    "read_patch_log",
    "read_splits",
    "read_summary",
    "read_transfer",
    "run_minutes",
    "step_details",
]
