"""Checkers for agent rollouts: what the agent left in its work directory, its final message, or
a command the task names, each turned into a Score whose feedback says expected vs got.

    check: [{file: out.csv, contains: "total,42"}, {final: true, regex: "(?i)done"},
            {command: "python3 check.py"}]

A command check runs in the work directory after the agent (same sandbox, no network) with the
item's reference as JSON in ``SKILLGRAD_REFERENCE``: exit 0 passes; a stdout line ``score: 0.7``
gives a partial score.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from skillgrad.harnesses.process import Layout, base_environment, run_boxed
from skillgrad.sandbox.bounds import tail
from skillgrad.types import Score

_SCORE = re.compile(r"^\s*score\s*:\s*([0-9.]+)\s*$", re.MULTILINE | re.IGNORECASE)


class Check(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file: str | None = Field(None, description="a path in the work directory")
    final: bool = Field(False, description="check the agent's final message")
    command: str | None = Field(None, description="shell command run in the work directory")
    contains: str | None = None
    equals: str | None = None
    regex: str | None = None
    exists: bool | None = None
    timeout_s: float = Field(60.0, gt=0)

    @model_validator(mode="after")
    def _one_target(self) -> Check:
        targets = [self.file is not None, self.final, self.command is not None]
        if sum(targets) != 1:
            raise ValueError("a check names exactly one of: file, final: true, command")
        tests = [self.contains, self.equals, self.regex, self.exists]
        if self.command is None and all(t is None for t in tests):
            raise ValueError("a file / final check needs contains, equals, regex or exists")
        if self.regex is not None:
            try:
                re.compile(self.regex)
            except re.error as exc:
                raise ValueError(f"invalid regex {self.regex!r}: {exc}") from None
        return self


def _text_verdict(check: Check, what: str, text: str | None) -> tuple[bool, str]:
    if text is None:
        ok = check.exists is False
        return ok, f"{'PASS' if ok else 'FAIL'} {what}: does not exist"
    if check.exists is False:
        return False, f"FAIL {what}: exists but should not"
    shown = json.dumps(text[:300]) + ("..." if len(text) > 300 else "")
    if check.equals is not None and text.strip() != check.equals.strip():
        return False, f"FAIL {what}: expected exactly {json.dumps(check.equals)}; got {shown}"
    if check.contains is not None and check.contains not in text:
        return False, f"FAIL {what}: expected to contain {json.dumps(check.contains)}; got {shown}"
    if check.regex is not None and not re.search(check.regex, text):
        return False, f"FAIL {what}: expected to match /{check.regex}/; got {shown}"
    return True, f"PASS {what}"


def _read(workdir: Path, rel: str) -> str | None:
    path = (workdir / rel).resolve()
    if not path.is_relative_to(workdir.resolve()) or not path.is_file():
        return None
    return path.read_bytes().decode("utf-8", errors="replace")


def run_check(check: Check, layout: Layout, final: str, reference: Any) -> tuple[float, str]:
    """(value in [0, 1], one feedback line) for one check."""
    workdir = layout.work()
    if check.file is not None:
        ok, line = _text_verdict(check, f"file {check.file}", _read(workdir, check.file))
        return float(ok), line
    if check.final:
        ok, line = _text_verdict(check, "final message", final)
        return float(ok), line
    assert check.command is not None
    env = base_environment(layout)
    env["SKILLGRAD_REFERENCE"] = json.dumps(reference)
    out = run_boxed(["/bin/sh", "-c", check.command], layout, env, check.timeout_s)
    last = tail((out.stdout + out.stderr).strip(), 400)
    if out.timed_out:
        return 0.0, f"FAIL command {check.command!r}: timed out after {check.timeout_s:g}s"
    m = _SCORE.findall(out.stdout)
    value = min(1.0, max(0.0, float(m[-1]))) if m else float(out.returncode == 0)
    verdict = "PASS" if out.returncode == 0 else "FAIL"
    return value, f"{verdict} command {check.command!r} (exit {out.returncode}): {last}"


def score_checks(checks: list[Check], layout: Layout, final: str, reference: Any) -> Score:
    """Mean of the checks' values; passed only when every check passed."""
    results = [run_check(c, layout, final, reference) for c in checks]
    value = sum(v for v, _ in results) / len(results)
    passed = all(line.startswith("PASS") for _, line in results)
    return Score(value, passed and value >= 1.0, "\n".join(line for _, line in results))


__all__ = ["Check", "run_check", "score_checks"]
