"""``HarnessTask`` (entry point ``harness``): the target is an agent program, not a chat call.

Per item: a fresh work directory with the item's files; the skill package installed where the
agent looks for skills; the agent run non-interactively on the item's prompt with a time limit;
every event it printed kept as trajectory steps (untruncated), plus the files it created or
changed; the item scored by its checks. The agent reaches its own model (``endpoint``); the run's
``models.target`` is not called. An agent that crashed, timed out or could not reach its endpoint
is an infrastructure failure (``infra_error``): missing data, not a zero for the skill.

The whole agent run (work directory, box, endpoint relay, checks) is one picklable ``AgentJob``
run by the bound executor (``hardware.executor``): a thread here, or a Ray task on a cluster
node, which then needs the agent CLI installed at the same path, the endpoint reachable and the
key variable set. The job carries the key variable's *name*, never its value; the value read
where the job runs is replaced by ``***`` in the trajectory before it leaves the job, so neither
the driver's disk nor the optimizer sees it, even when a node's key differs from the driver's.
At most ``max_parallel`` agents run at once, wherever they run. The agent's
model calls go from the agent to its endpoint: they are never in the run's call cache, ledger or
budget, whichever executor runs it.

Items come from ``split_dir/{train,val,test}.jsonl``, one object per line::

    {"id": "sum-1", "prompt": "Total the amounts in data.csv into total.txt",
     "files": {"data.csv": "amount\\n3\\n4\\n"}, "reference": "7",
     "check": [{"file": "total.txt", "equals": "7"}]}
"""

from __future__ import annotations

import hashlib
import json
import socket
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

import skillgrad.safeparse as safeparse
from skillgrad.errors import ConfigError, DataError, SkillError, SystemicError
from skillgrad.executors import LOCAL, JobLost, LoopSlots, RolloutExecutor
from skillgrad.harnesses.base import AgentEndpoint, AgentHarness
from skillgrad.harnesses.checks import Check, score_checks
from skillgrad.harnesses.command import load_harness
from skillgrad.harnesses.events import Transcript
from skillgrad.harnesses.process import Layout, ProcessOutcome, endpoint_access
from skillgrad.models.base import ModelBackend
from skillgrad.redact import redact_text
from skillgrad.runs.io import jsonl_lines
from skillgrad.sandbox import check_mode, require_bubblewrap
from skillgrad.sandbox.bounds import tail
from skillgrad.skill.document import skill_hash
from skillgrad.skill.package import SkillPackage, is_package_text
from skillgrad.tasks.base import SPLITS, Split, failed_trajectory, scorer_failure
from skillgrad.types import Item, Message, Score, Trajectory, to_json

INFRA_PREFIX = "infrastructure: "
FILE_LIMIT = 64_000  # characters of a created / changed file kept in the trajectory
MAX_FILES = 100  # created / changed / deleted files listed in the trajectory; the rest counted


class HarnessOptions(BaseModel):
    """``env.options`` of ``task: harness``."""

    model_config = ConfigDict(extra="forbid")

    harness: str | dict[str, Any] = Field(
        "claude_code", description="preset name (claude_code | codex) or a command harness"
    )
    endpoint: AgentEndpoint = Field(
        default_factory=AgentEndpoint, description="overrides the preset's"
    )
    split_dir: str = Field(description="folder with train.jsonl, val.jsonl, test.jsonl")
    check: list[Check] = Field(default_factory=list, description="for items without their own")
    timeout_s: float = Field(600.0, gt=0, description="wall-clock limit per agent run")
    max_parallel: int = Field(2, ge=1, description="agents running at once")
    sandbox: str = Field(
        "bubblewrap", description="bubblewrap, or unsandboxed (opted into by name only)"
    )
    name: str = "harness"


class HarnessTask:
    name = "harness"

    def __init__(self, base_dir: str | Path | None = None, **options: Any) -> None:
        try:
            self.options = HarnessOptions.model_validate(options)
        except ValidationError as exc:
            errors = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise ConfigError(f"env.options (task harness): {errors}") from None
        self.base_dir = Path(base_dir or ".")
        self.name = self.options.name
        self.harness, defaults = load_harness(self.options.harness)
        given = self.options.endpoint.model_dump(exclude_none=True)
        self.endpoint = AgentEndpoint.model_validate(
            {**defaults.model_dump(exclude_none=True), **given}
        )
        self.harness.program()  # fail now, with an install hint, not on every item
        self.mode = check_mode(self.options.sandbox)
        if self.mode == "bubblewrap":
            require_bubblewrap()
        self._slots = LoopSlots(self.options.max_parallel)
        self.executor: RolloutExecutor = LOCAL
        self._items = self._load()

    def _load(self) -> dict[str, list[Item]]:
        root = Path(self.options.split_dir)
        root = root if root.is_absolute() else self.base_dir / root
        out: dict[str, list[Item]] = {}
        for split in SPLITS:
            path = root / f"{split}.jsonl"
            if not path.is_file():
                raise DataError(f"{path}: missing; a harness task needs {split}.jsonl in {root}")
            out[split] = [self._item(path, n, line) for n, line in _rows(path)]
            if not out[split]:
                raise DataError(f"{path}: no items")
        return out

    def _item(self, path: Path, line: int, row: dict[str, Any]) -> Item:
        where = f"{path}:{line}"
        for key in ("id", "prompt"):
            if not isinstance(row.get(key), str) or not row[key]:
                raise DataError(f"{where}: field {key!r} must be a non-empty string")
        files = row.get("files") or {}
        if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
            raise DataError(f"{where}: 'files' must map relative paths to text")
        raw = row.get("check")
        checks = [raw] if isinstance(raw, dict) else raw
        try:
            parsed = [Check.model_validate(c) for c in checks] if checks else self.options.check
        except ValidationError as exc:
            raise DataError(f"{where}: bad check: {exc.errors()[0]['msg']}") from None
        if not parsed:
            raise DataError(f"{where}: no 'check' and no env.options.check: nothing to score")
        meta = {"prompt": row["prompt"], "files": files, "check": [c.model_dump() for c in parsed]}
        return Item(row["id"], row["prompt"], row.get("reference"), meta)

    def load_split(self, split: Split) -> list[Item]:
        return list(self._items[split])

    def bind_executor(self, executor: RolloutExecutor) -> None:
        """Run each agent on ``executor`` (``hardware.executor``)."""
        self.executor = executor

    def agent_job(self, item: Item, skill: str) -> AgentJob:
        """One agent run of ``item`` with ``skill`` installed, as a picklable job (the key is
        read where the job runs, from ``endpoint.api_key_env``: it is never shipped)."""
        return AgentJob(self.harness, self.endpoint, self.mode, self.options.timeout_s, item, skill)

    async def rollout(self, item: Item, skill: str, backend: ModelBackend) -> Trajectory:
        """Run the agent on ``item`` with ``skill`` installed; ``backend`` is not called."""
        package_of(skill)  # a skill that is no package fails here, on the driver
        self.endpoint.api_key()  # set here too: remembered for redaction on the driver
        job = self.agent_job(item, skill)
        async with self._slots():
            try:
                return await self.executor.run(job)
            except JobLost as exc:  # its Ray worker or node died: missing data, not a zero
                reason = str(exc)
                lost = failed_trajectory(
                    item, skill, (Message("user", str(item.input)),), f"{INFRA_PREFIX}{reason}"
                )
                return replace(lost, infra_error=reason)


@dataclass(frozen=True)
class AgentJob:
    """One agent run, start to score: plain data (harness, endpoint, item, skill), picklable."""

    harness: AgentHarness
    endpoint: AgentEndpoint
    mode: str
    timeout_s: float
    item: Item
    skill: str

    def __call__(self) -> Trajectory:
        """Run the agent and score it; the key read here is scrubbed from the result."""
        try:
            key = self.endpoint.api_key()
        except ConfigError as exc:  # the driver has it: the node running this job lacks it
            raise ConfigError(f"on node {socket.gethostname()}: {exc}") from None
        traj = self._run(key)
        return _scrubbed(traj) if key else traj

    def _run(self, key: str) -> Trajectory:
        item, skill = self.item, self.skill
        package = package_of(skill)
        with (
            tempfile.TemporaryDirectory(prefix="skillgrad-agent-") as tmp,
            endpoint_access(self.endpoint.base_url, self.mode) as access,
        ):
            layout = Layout(Path(tmp), self.mode)
            layout.home().mkdir()
            work = layout.work()
            _populate(work, item.meta.get("files") or {})
            before = _snapshot(work)
            skills = self.harness.skills_folder(layout)
            if package is not None:
                package.write(skills / package.name)
            values = {
                "model": self.endpoint.model or "",
                "base_url": access.base_url,
                "api_key": key,
                "skill_name": package.name if package else "",
            }
            outcome, transcript = self.harness.run(
                str(item.input), layout, values, self.timeout_s, access
            )
            files = _changes(work, before, skills)
            infra = infra_reason(outcome, transcript, self.timeout_s)
            score, error = (
                (Score(0.0, False, f"error: {INFRA_PREFIX}{infra}"), None)
                if infra
                else _score(item, layout, transcript)
            )
        return _trajectory(item, skill, transcript, outcome, files, score, infra, error)


def _scrubbed(traj: Trajectory) -> Trajectory:
    """``traj`` with every remembered secret (the endpoint key read by this process) as ``***``
    in all its text."""
    data = to_json(traj)
    clean = _redact_strings(data)
    return traj if clean == data else Trajectory.from_json(clean)


def _redact_strings(value: Any) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {k: _redact_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_strings(v) for v in value]
    return value


def _score(item: Item, layout: Layout, transcript: Transcript) -> tuple[Score, str | None]:
    """The checks' verdict (and None), or a check raising on what the agent left: the item's
    score 0 with the error (``scorer_failure``)."""
    checks = [Check.model_validate(c) for c in item.meta["check"]]
    try:
        score = score_checks(checks, layout, transcript.final, item.reference)
    except SystemicError:
        raise
    except Exception as exc:  # the agent's output broke a check: this item's verdict
        return scorer_failure(exc)
    if transcript.error:  # the agent gave up (e.g. turn limit): the model's failure
        feedback = f"agent error: {transcript.error}\n{score.feedback}"
        return Score(score.value, False, feedback, score.evidence), None
    return score, None


def package_of(skill: str) -> SkillPackage | None:
    """The package to install: a bundle's, or None for an empty skill (the no-skill baseline)."""
    if is_package_text(skill):
        return SkillPackage.from_bundle(skill)
    if not skill.strip():
        return None
    try:
        return SkillPackage.from_files({"SKILL.md": skill})
    except SkillError as exc:
        raise ConfigError(
            "a harness task installs a skill package: set train.init_skill to a folder with "
            f"SKILL.md (frontmatter name + description), or to such a SKILL.md file ({exc})"
        ) from None


def infra_reason(outcome: ProcessOutcome, transcript: Transcript, timeout_s: float) -> str | None:
    """Why the run says nothing about the skill (agent program or endpoint failed), or None."""
    last = tail(outcome.stderr.strip() or outcome.stdout.strip(), 500)
    if outcome.timed_out:
        return f"the agent did not finish within {timeout_s:g}s (killed)"
    if outcome.returncode is None:
        return last or "the agent could not be started"
    if transcript.infra:
        return f"the agent could not use its model endpoint: {transcript.error}"
    if not transcript.finished and outcome.returncode != 0:
        return f"the agent exited with code {outcome.returncode} without finishing: {last}"
    return None


def _rows(path: Path) -> list[tuple[int, dict[str, Any]]]:
    rows = []
    for n, line in enumerate(jsonl_lines(path.read_text(encoding="utf-8")), 1):
        if not line.strip():
            continue
        try:
            row = safeparse.loads(line, max_chars=None)
        except json.JSONDecodeError as exc:  # also nested too deep (safeparse.JSONBoundError)
            raise DataError(f"{path}:{n}: invalid JSON ({exc.msg}, column {exc.colno})") from None
        if not isinstance(row, dict):
            raise DataError(f"{path}:{n}: each line must be a JSON object")
        rows.append((n, row))
    return rows


def _populate(work: Path, files: dict[str, str]) -> None:
    work.mkdir(parents=True)
    for rel, text in files.items():
        target = (work / rel).resolve()
        if not target.is_relative_to(work.resolve()):
            raise DataError(f"item file {rel!r} points outside the work directory")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def _snapshot(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): _digest(p)
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def _digest(path: Path) -> str:
    """sha256 of a file the agent may have made large (read in chunks, not whole)."""
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _changes(work: Path, before: dict[str, str], skills: Path) -> dict[str, Any]:
    """Files the agent created, changed or deleted (text kept up to FILE_LIMIT characters, at
    most MAX_FILES files; an entry ``"..."`` counts the others)."""
    after = _snapshot(work)
    out: dict[str, Any] = {}
    more = 0
    for rel, digest in after.items():
        if before.get(rel) == digest or (work / rel).resolve().is_relative_to(skills.resolve()):
            continue
        if len(out) >= MAX_FILES:
            more += 1
            continue
        data = (work / rel).read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            out[rel] = {"status": "binary", "bytes": len(data)}
            continue
        cut = len(text) > FILE_LIMIT
        out[rel] = {
            "status": "changed" if rel in before else "created",
            "content": text[:FILE_LIMIT],
            **({"cut_chars": len(text) - FILE_LIMIT} if cut else {}),
        }
    for rel in before:
        if rel not in after:
            if len(out) >= MAX_FILES:
                more += 1
            else:
                out[rel] = {"status": "deleted"}
    if more:
        out["..."] = {"status": "not listed", "files": more}
    return out


def _trajectory(
    item: Item,
    skill: str,
    transcript: Transcript,
    outcome: ProcessOutcome,
    files: dict[str, Any],
    score: Score,
    infra: str | None,
    scorer_error: str | None = None,
) -> Trajectory:
    steps: list[dict[str, Any]] = list(transcript.steps)
    steps.append({"type": "files", "changes": files})
    steps.append(
        {
            "type": "agent_exit",
            "returncode": outcome.returncode,
            "timed_out": outcome.timed_out,
            "duration_s": round(outcome.duration_s, 3),
            "stderr_tail": tail(outcome.stderr, 2000),
            "isolation": outcome.isolation,
        }
    )
    if infra:
        steps.append({"type": "infra_error", "reason": infra})
    error = f"{INFRA_PREFIX}{infra}" if infra else scorer_error
    return Trajectory(
        item_id=item.id,
        skill_hash=skill_hash(skill),
        messages=(Message("user", str(item.input)), Message("assistant", transcript.final)),
        output=transcript.final,
        score=score,
        reference=item.reference,
        error=error,
        usage=transcript.usage,
        steps=tuple(steps),
        infra_error=infra,
    )


__all__ = [
    "INFRA_PREFIX",
    "AgentJob",
    "HarnessOptions",
    "HarnessTask",
    "infra_reason",
    "package_of",
]
