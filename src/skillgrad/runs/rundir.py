"""RunDir: the only writer of a run directory — create, resume, checkpoint, artifacts, events.

Commit order per step: step artifacts, skill version, patch-log lines, best skill, history, and
last ``runtime_state.json`` (the commit point). On resume, patch-log lines from a step that was
not committed are dropped, so a kill at any instant resumes to the uninterrupted result.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any

from skillgrad.errors import RunDirError
from skillgrad.runs.io import (
    append_jsonl,
    atomic_write_json,
    atomic_write_text,
    read_json,
    read_jsonl,
    write_jsonl,
)
from skillgrad.runs.layout import RunPaths
from skillgrad.train.state import TrainState

# What may change between a run and its resume because it cannot change results: limits,
# parallelism, trackers, and where / how a model is reached (not which model it is).
RESUMABLE_CHANGES = ("budget", "hardware", "trackers", "base_dir")
RESUMABLE_MODEL_KEYS = (
    "base_url", "api_key_env", "timeout_s", "max_retries", "max_concurrency",
    "requests_per_minute", "tokens_per_minute", "azure_endpoint", "api_version",
)  # fmt: skip


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")


def _comparable(config: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in config.items() if k not in RESUMABLE_CHANGES}
    models = out.get("models")
    if isinstance(models, dict):
        out["models"] = {
            role: {k: v for k, v in spec.items() if k not in RESUMABLE_MODEL_KEYS}
            if isinstance(spec, dict)
            else spec
            for role, spec in models.items()
        }
    return out


def _flat_diff(a: Any, b: Any, prefix: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for key in sorted(set(a) | set(b)):
            out += _flat_diff(a.get(key), b.get(key), f"{prefix}{key}.")
        return out
    return [] if a == b else [f"{prefix.rstrip('.')}: {a!r} -> {b!r}"]


class RunDir:
    def __init__(self, root: Path) -> None:
        self.paths = RunPaths(root)

    @property
    def root(self) -> Path:
        return self.paths.root

    def exists(self) -> bool:
        return self.paths.config.exists()

    def create_or_check(self, config: dict[str, Any]) -> bool:
        """Write config.json for a new run, or check a resumed run's config. True if resuming."""
        if not self.exists():
            self.root.mkdir(parents=True, exist_ok=True)
            atomic_write_json(self.paths.config, config)
            return False
        self._remove_torn_writes()
        stored = read_json(self.paths.config)
        diffs = _flat_diff(_comparable(stored), _comparable(config))
        if diffs:
            raise RunDirError(
                f"{self.root} holds a run with a different config:\n  "
                + "\n  ".join(diffs[:10])
                + "\nRe-run with --fresh to start a new run directory, or set env.run_name."
            )
        atomic_write_json(self.paths.config, config)  # budget/hardware may have been raised
        return True

    def _remove_torn_writes(self) -> None:
        """Temp files of atomic writes that a kill interrupted (never renamed into place)."""
        for tmp in self.root.rglob(".*.tmp"):
            tmp.unlink(missing_ok=True)

    def load_state(self) -> TrainState | None:
        data = read_json(self.paths.state)
        if data is None:
            return None
        try:
            state = TrainState.from_json(data)
        except (TypeError, KeyError) as exc:
            raise RunDirError(
                f"{self.paths.state} is corrupt ({exc}); re-run with --fresh"
            ) from exc
        rows = read_jsonl(self.paths.patch_log)
        kept = [r for r in rows if r.get("step", 0) <= state.global_step]
        if len(kept) != len(rows):
            write_jsonl(self.paths.patch_log, kept)
        return state

    def checkpoint(self, state: TrainState) -> None:
        atomic_write_text(self.paths.skill_version(state.skill_version), state.skill)
        atomic_write_text(self.paths.best_skill, state.best_skill)
        atomic_write_json(self.paths.history, list(state.history))
        atomic_write_json(self.paths.conflicts, list(state.conflicts))
        atomic_write_json(self.paths.state, state.to_json())

    def write_initial(self, skill: str, splits: dict[str, list[str]]) -> None:
        atomic_write_text(self.paths.skill_version(0), skill)
        atomic_write_json(self.paths.splits, splits)
        if not self.paths.conflicts.exists():
            atomic_write_json(self.paths.conflicts, [])
        if not self.paths.patch_log.exists():
            atomic_write_text(self.paths.patch_log, "")

    def write_artifacts(self, folder: Path, files: dict[str, Any]) -> None:
        """Write ``{name: value}`` into ``folder``: .md/.txt as text, .jsonl as rows, else JSON."""
        for name, value in files.items():
            path = folder / name
            if name.endswith((".md", ".txt")):
                atomic_write_text(path, str(value))
            elif name.endswith(".jsonl"):
                write_jsonl(path, value)
            else:
                atomic_write_json(path, value)

    def append_patch_log(self, rows: list[dict[str, Any]]) -> None:
        for row in rows:
            append_jsonl(self.paths.patch_log, row)

    def event(self, name: str, **fields: Any) -> dict[str, Any]:
        record = {"t": _now(), "event": name, **fields}
        append_jsonl(self.paths.events, record)
        return record

    def write_summary(self, summary: dict[str, Any], report: str) -> None:
        atomic_write_json(self.paths.summary, summary)
        atomic_write_text(self.paths.report, report)


def find_fresh_root(root: Path) -> Path:
    """``root`` if unused, else ``root-2``, ``root-3``, ... (for ``--fresh``)."""
    if not (root / "config.json").exists():
        return root
    n = 2
    while (root.parent / f"{root.name}-{n}" / "config.json").exists():
        n += 1
    return root.parent / f"{root.name}-{n}"


__all__ = ["RunDir", "find_fresh_root"]
