"""Code-generation rollout: ``CodeTask``, the base of tasks where the target writes a function.

The code is pulled tolerantly from the reply (fenced blocks, an unclosed fence, or bare code),
run against hidden tests in the sandbox, and scored by the fraction of tests passed. Why it
failed (timeout, memory, blocked network or file access, exception and traceback tail) goes into
the trajectory's steps and the score's feedback, where the optimizer reads it.

The model call runs here, on the driver; the sandbox run is a picklable ``SandboxJob`` handed
to the bound executor (``hardware.executor``: a thread here, or a Ray task on a cluster).
"""

from __future__ import annotations

import re
import socket
import threading
from dataclasses import asdict, dataclass
from typing import Any

from skillgrad.errors import ConfigError, SystemicError
from skillgrad.executors import LOCAL, JobLost, RolloutExecutor
from skillgrad.models.base import ModelBackend
from skillgrad.sandbox import SandboxResult, run_tests
from skillgrad.sandbox.bounds import tail
from skillgrad.tasks.base import (
    SingleTurnTask,
    Split,
    failed_trajectory,
    scorer_failure,
)
from skillgrad.types import Item, Score, Trajectory

_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_CODE_START = re.compile(r"^(def |async def |class |import |from |@)", re.MULTILINE)
# Rollouts run concurrently; each sandbox is a process, so cap them at the machine's cores
# (per process: on a Ray worker, the cluster's CPU accounting is the cap).
_SANDBOX_SLOTS = threading.BoundedSemaphore(2)


@dataclass(frozen=True)
class SandboxJob:
    """Judging ``code`` against ``tests`` in the sandbox: plain data, picklable, no model."""

    code: str
    tests: str
    timeout_s: float
    memory_mb: int
    entry_point: str | None
    mode: str

    def __call__(self) -> SandboxResult:
        """The sandbox result; a sandbox that cannot work on this node (bubblewrap missing) is
        its ConfigError naming the node (the driver checked its own before any model call)."""
        try:
            with _SANDBOX_SLOTS:
                return run_tests(
                    self.code,
                    self.tests,
                    self.timeout_s,
                    self.memory_mb,
                    entry_point=self.entry_point,
                    mode=self.mode,
                )
        except ConfigError as exc:
            raise type(exc)(f"on node {socket.gethostname()}: {exc}") from None


def extract_code(text: str, entry_point: str = "") -> str:
    """The code in a model reply: the fenced block defining ``entry_point`` (else the longest
    python-ish block); without fences, everything from the first ``def``/``import`` line."""
    blocks = [
        (lang.lower(), body.strip("\n")) for lang, body in _FENCE.findall(text) if body.strip()
    ]
    if blocks:
        wanted = [b for lang, b in blocks if entry_point and f"def {entry_point}" in b]
        pythonish = [b for lang, b in blocks if lang in ("", "python", "py", "python3")]
        pool = wanted or pythonish or [b for _, b in blocks]
        return max(pool, key=len) if not wanted else wanted[0]
    start = _CODE_START.search(text)
    # keep the first line's indentation: a bare reply may be a function body
    return text[start.start() :].strip() if start else text.strip("\n").rstrip()


def sandbox_step(result: SandboxResult) -> dict[str, Any]:
    """The sandbox outcome as a trajectory step (JSON-ready, outputs shortened)."""
    step = {"type": "sandbox", **asdict(result)}
    step["tests"] = list(result.tests)
    step["stdout"], step["stderr"] = tail(result.stdout, 1000), tail(result.stderr, 1000)
    return step


class CodeTask(SingleTurnTask):
    """Base for code tasks. Subclasses define ``load_split``, ``prompt(item)``, ``tests(item)``
    (assert lines or a ``check(candidate)`` function) and ``entry_point(item)``."""

    name = "code_task"
    max_tokens = 384
    temperature = 0.0
    timeout_s = 10.0
    memory_mb = 256
    sandbox = "bubblewrap"  # or "unsandboxed", only by name (skillgrad.sandbox.MODES)
    executor: RolloutExecutor = LOCAL  # where sandbox runs go (bind_executor)

    def load_split(self, split: Split) -> list[Item]:
        raise NotImplementedError

    def tests(self, item: Item) -> str:
        raise NotImplementedError

    def entry_point(self, item: Item) -> str:
        return ""

    def prepare_code(self, code: str, item: Item) -> str:
        """Hook: adjust extracted code before it runs (e.g. prepend a given header)."""
        return code

    def bind_executor(self, executor: RolloutExecutor) -> None:
        """Run the sandbox part of each rollout on ``executor`` (``hardware.executor``)."""
        self.executor = executor

    def judge_job(self, code: str, item: Item) -> SandboxJob:
        """The sandbox run of ``code`` against the item's tests, as a picklable job."""
        return SandboxJob(
            code,
            self.tests(item),
            self.timeout_s,
            self.memory_mb,
            self.entry_point(item) or None,
            self.sandbox,
        )

    def run(self, code: str, item: Item) -> SandboxResult:
        """Run ``code`` against the item's tests in the sandbox, here (blocking)."""
        return self.judge_job(code, item)()

    def score_result(self, result: SandboxResult, code: str, item: Item) -> Score:
        if result.tests_total == 0:
            return Score(0.0, False, "no tests ran: " + result.summary())
        name = self.entry_point(item)
        note = ""
        if name and f"def {name}" not in code:
            note = f"the code does not define a function named `{name}`\n"
        return Score(result.fraction, result.passed, note + result.summary())

    def score(self, output: str, item: Item) -> Score:
        """Scorer-compatible: extract, run and score (blocking)."""
        code = self.prepare_code(extract_code(output, self.entry_point(item)), item)
        return self.score_result(self.run(code, item), code, item)

    async def rollout(self, item: Item, skill: str, backend: ModelBackend) -> Trajectory:
        reply = await self.target_reply(item, skill, backend)
        if isinstance(reply, Trajectory):  # the call failed: the item's failed trajectory
            return reply
        steps: list[dict[str, Any]] = [{"type": "model", "text": reply.text}]
        code = extract_code(reply.text, self.entry_point(item))
        code = self.prepare_code(code, item) if code.strip() else code
        steps.append({"type": "code", "code": code})
        error = None
        if not code.strip():
            score = Score(0.0, False, "the reply contains no code")
        else:
            try:
                result = await self.executor.run(self.judge_job(code, item))
                steps.append(sandbox_step(result))
                score = self.score_result(result, code, item)
            except (OSError, JobLost) as exc:  # the sandbox could not start / its worker died
                return failed_trajectory(
                    item, skill, reply.conversation, f"sandbox failed: {exc}", infra=True
                )
            except SystemicError:
                raise
            except Exception as exc:  # the reply broke the judging: this item's verdict
                score, error = scorer_failure(exc)
        return reply.trajectory(item, skill, score, error, tuple(steps))


__all__ = ["CodeTask", "SandboxJob", "extract_code", "sandbox_step"]
