"""RunDir: the only writer of a run directory — create, resume, checkpoint, artifacts, events.

Commit order per step: step artifacts, skill version, patch-log lines, best skill, history, and
last ``runtime_state.json`` (the commit point), sealed with hashes of what resume depends on
(``runs/integrity.py``). On resume the seal is checked, patch-log lines from a step that was not
committed are dropped and the files derived from the state are rewritten from it, so a kill at
any instant resumes to the uninterrupted result and a damaged directory is an error, not a guess.
Writing needs the directory's lock (``runs/lock.py``), taken by ``create_or_check`` and released
by ``close``; readers never take it.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from skillgrad.errors import RunDirError
from skillgrad.redact import redact_json
from skillgrad.runs import integrity
from skillgrad.runs.io import (
    PRIVATE_DIR,
    append_jsonl,
    atomic_write_json,
    atomic_write_text,
    read_json,
    write_jsonl,
)
from skillgrad.runs.layout import RunPaths
from skillgrad.runs.lock import RunLock
from skillgrad.runs.packages import (
    best_skill_text,
    remove_torn_folders,
    write_best_folder,
    write_version_folder,
)

# What may change between a run and its resume because it cannot change results: limits,
# parallelism, trackers, and where / how a model is reached (not which model it is).
RESUMABLE_CHANGES = ("budget", "hardware", "trackers", "base_dir")
# more epochs continue a run; the headroom check only refuses to start, and stopping at the
# reward ceiling only spares steps no candidate could pass: neither changes the best skill
RESUMABLE_TRAIN_KEYS = ("num_epochs", "headroom_check", "stop_at_ceiling")
RESUMABLE_MODEL_KEYS = (
    "base_url", "api_key_env", "timeout_s", "max_retries", "max_concurrency",
    "requests_per_minute", "tokens_per_minute", "azure_endpoint", "api_version",
)  # fmt: skip


class Checkpoint(Protocol):
    """What ``checkpoint`` commits: an object that gives its JSON form (``TrainState``). The JSON
    must hold ``skill``, ``skill_version``, ``best_skill``, ``history`` and ``conflicts``, the
    keys of the files derived from it. runs/ deals only in this JSON, never in train/ types."""

    def to_json(self) -> dict[str, Any]: ...


StateT = TypeVar("StateT", bound=Checkpoint)


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")


def _comparable(config: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in config.items() if k not in RESUMABLE_CHANGES}
    if isinstance(out.get("train"), dict):  # more epochs continue a run (checked separately)
        out["train"] = {k: v for k, v in out["train"].items() if k not in RESUMABLE_TRAIN_KEYS}
    models = out.get("models")
    if isinstance(models, dict):
        out["models"] = {
            role: {k: v for k, v in spec.items() if k not in RESUMABLE_MODEL_KEYS}
            if isinstance(spec, dict)
            else spec
            for role, spec in models.items()
        }
    return out


def _epochs(config: dict[str, Any]) -> int | None:
    train = config.get("train")
    value = train.get("num_epochs") if isinstance(train, dict) else None
    return value if isinstance(value, int) else None


_ABSENT = object()


def _flat_diff(a: Any, b: Any, prefix: str = "", defaults: Any = None) -> list[str]:
    """Differences from the stored record ``a`` to ``b``, one line per leaf. A key ``a`` lacks
    (a setting added by a later version) is no difference while ``b`` has its value in
    ``defaults`` (the config's defaults): runs and sweeps started before it still resume. So is
    a key ``b`` lacks (a setting a later version removed) while ``a`` has its value there."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for key in sorted(set(a) | set(b)):
            default = defaults.get(key, _ABSENT) if isinstance(defaults, dict) else _ABSENT
            if key not in a and default is not _ABSENT and b.get(key) == default:
                continue
            if key not in b and default is not _ABSENT and a.get(key) == default:
                continue
            out += _flat_diff(a.get(key), b.get(key), f"{prefix}{key}.", default)
        return out
    return [] if a == b else [f"{prefix.rstrip('.')}: {a!r} -> {b!r}"]


class RunDir:
    def __init__(self, root: Path) -> None:
        self.paths = RunPaths(root)
        self.lock: RunLock | None = None

    @property
    def root(self) -> Path:
        return self.paths.root

    def exists(self) -> bool:
        return self.paths.config.exists()

    def stored_config(self) -> dict[str, Any] | None:
        """The config.json of a run to resume (``read_run_config``), None for a new run."""
        integrity.check_no_links(self.root)
        return read_run_config(self.paths) if self.exists() else None

    def create_or_check(
        self,
        config: dict[str, Any],
        data: Mapping[str, Sequence[Any]],
        defaults: dict[str, Any] | None = None,
    ) -> bool:
        """Take the writer lock, then write config.json for a new run, or check a resumed run's
        config and data (``{split: items}``) against what it started with (a setting its
        config.json lacks may only have its value in ``defaults``). True if resuming."""
        integrity.check_no_links(self.root)  # before the lock file is opened or written
        if self.lock is None or not self.lock.held:
            self.lock = RunLock.acquire(self.root)
            with contextlib.suppress(PermissionError):  # another user's folder stays theirs
                self.root.chmod(PRIVATE_DIR)  # a run made by an older version was 0755
            if self.lock.taken_over is not None:  # left behind by a killed run
                self.event("lock_taken_over", previous=self.lock.taken_over.__dict__)
        if not self.exists():
            atomic_write_json(self.paths.config, config)
            integrity.write_data_digest(self.paths, data)
            return False
        self._remove_torn_writes()
        stored = read_run_config(self.paths)
        integrity.check_data(self.paths, data)
        diffs = _flat_diff(
            _comparable(stored), _comparable(config), defaults=_comparable(defaults or {})
        )
        before, after = _epochs(stored), _epochs(config)
        if before is not None and after is not None and after < before:
            diffs.append(f"train.num_epochs: {before!r} -> {after!r} (it may only grow)")
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
        remove_torn_folders(self.root)

    def load_state(self, decode: Callable[[dict[str, Any]], StateT]) -> StateT | None:
        """The last committed state, checked against its seal (``runs/integrity.py``) and made
        an object by ``decode`` (e.g. ``TrainState.from_json``); a ``decode`` that raises
        TypeError, KeyError or ValueError means the state is corrupt (RunDirError).

        Patch-log lines of a step that was never committed are dropped, and the files derived
        from the state (skill version, best skill, history, conflicts) are rewritten from it: a
        kill between those writes and the commit, or a hand edit of them, cannot survive a
        resume. Anything else that does not match the seal is a RunDirError."""
        self._require_writer()
        sealed = integrity.read_state(self.paths)
        if sealed is None:
            return None
        data, record = sealed
        try:
            state = decode(data)
        except (TypeError, KeyError, ValueError) as exc:
            raise RunDirError(
                f"{self.paths.state} is corrupt ({exc}); re-run with --fresh"
            ) from exc
        integrity.check_splits(self.paths, record)
        integrity.check_ledger(self.paths, record)
        head = integrity.committed_patch_log(self.paths, record)
        if self.paths.patch_log.read_bytes() != head:
            atomic_write_text(self.paths.patch_log, head.decode("utf-8"))
        self._write_derived(state.to_json())
        return state

    def checkpoint(self, state: Checkpoint) -> None:
        """Commit ``state``: derived files first, then the sealed runtime_state.json."""
        self._require_writer()
        data = state.to_json()
        self._write_derived(data)
        atomic_write_json(self.paths.state, integrity.seal(data, self.paths))

    def _write_derived(self, state: Mapping[str, Any]) -> None:
        version = self.paths.skill_version(state["skill_version"])
        atomic_write_text(version, state["skill"])
        write_version_folder(version, state["skill"])  # a package: also skill_vNNNN/
        atomic_write_text(self.paths.best_skill, best_skill_text(state["best_skill"]))
        write_best_folder(self.root, state["best_skill"])  # a package: best_skill/
        atomic_write_json(self.paths.history, list(state["history"]))
        atomic_write_json(self.paths.conflicts, list(state["conflicts"]))

    def discard_new(self) -> None:
        """Undo ``create_or_check`` of a new run that never started (its models could not be
        assembled): remove the files it and the call store wrote, and the folder if that
        leaves it empty, so a corrected config starts afresh instead of meeting "a different
        config". Never touches anything else in the folder. Releases the lock."""
        p = self.paths
        db = p.calls_db
        sidecars = [db.with_name(db.name + x) for x in ("-wal", "-shm", "-journal")]
        made = [p.config, p.splits, p.data_digest, p.events, db, *sidecars]
        for path in made:
            path.unlink(missing_ok=True)
        self.close()
        with contextlib.suppress(OSError):
            self.root.rmdir()  # only when empty

    def close(self) -> None:
        """Release the writer lock (idempotent); the directory stays readable."""
        if self.lock is not None:
            self.lock.release()

    def __enter__(self) -> RunDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _require_writer(self) -> None:
        if self.lock is None or not self.lock.held:
            raise RunDirError(
                f"{self.root}: writing a run directory needs its lock; call create_or_check first."
            )

    def write_initial(self, skill: str, splits: dict[str, list[str]]) -> None:
        self._require_writer()
        atomic_write_text(self.paths.skill_version(0), skill)
        write_version_folder(self.paths.skill_version(0), skill)
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
        self._require_writer()
        for row in rows:
            append_jsonl(self.paths.patch_log, row)

    def event(self, name: str, **fields: Any) -> dict[str, Any]:
        self._require_writer()
        record = redact_json({"t": _now(), "event": name, **fields})  # secrets by name too
        append_jsonl(self.paths.events, record)
        return record

    def write_summary(self, summary: dict[str, Any], report: str) -> None:
        self._require_writer()
        atomic_write_json(self.paths.summary, summary)
        atomic_write_text(self.paths.report, report)


def read_run_config(paths: RunPaths) -> dict[str, Any]:
    """The run's resolved config as config.json holds it (JSON, secrets redacted): what the run
    was trained with, e.g. its ``env.options.seed`` under ``skillgrad sweep --vary-split``.
    RunDirError when it is missing or not a run config."""
    stored = read_json(paths.config)
    if not isinstance(stored, dict) or not {"env", "models", "train"} <= set(stored):
        raise RunDirError(
            f"{paths.config}: not a skillgrad run config (a JSON object with env, models "
            "and train); it is missing, damaged or overwritten. Restore it, or "
            f"{integrity.FRESH}."
        )
    return stored


def find_fresh_root(root: Path) -> Path:
    """``root`` if unused, else ``root-2``, ``root-3``, ... (for ``--fresh``)."""
    if not (root / "config.json").exists():
        return root
    n = 2
    while (root.parent / f"{root.name}-{n}" / "config.json").exists():
        n += 1
    return root.parent / f"{root.name}-{n}"


__all__ = ["RunDir", "find_fresh_root", "read_run_config"]
