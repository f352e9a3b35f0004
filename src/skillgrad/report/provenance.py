"""Provenance of a skill: diff between versions and line-by-line blame.

``skill_diff`` compares the skill in force after two steps (default: initial vs best).
``blame`` walks ``skills/skill_vNNNN.md`` in order and attributes each line of ``best_skill.md``
to the accepted ``patch_log.jsonl`` entries that introduced it — or says honestly it cannot.
"""

from __future__ import annotations

import difflib
import html
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillgrad.errors import RunDirError
from skillgrad.runs.view import RunData, load_run
from skillgrad.skill.document import text_lines


@dataclass(frozen=True)
class BlameLine:
    """One line of the best skill and where it came from.

    ``source`` is ``"initial"``, the patch-log source (``reflect``, ``deep_reflect``,
    ``slow_update``), or ``"unattributed"`` when no patch-log entry accounts for the line.
    """

    line_no: int
    text: str
    source: str
    version: int | None = None
    step: int | None = None
    epoch: int | None = None
    op: str = ""
    section: str = ""
    rationale: str = ""
    trajectory_ids: tuple[str, ...] = ()


def skill_at(run: RunData, step: int | None, *, default: str = "best") -> tuple[str, str]:
    """The skill in force after ``step`` and a label for it.

    ``None`` means ``default`` (``"best"`` or ``"initial"``). A step that wrote no version file
    (a rejected step) resolves to the latest version at or before it.
    """
    if step is None:
        if default == "best":
            v = run.best_version()
            if run.best_skill is not None:
                return run.best_skill, f"best (v{v:04d})" if v is not None else "best"
            step = v
        else:
            step = 0
    if not run.skills:
        raise RunDirError(f"{run.root}/skills: no skill versions found; is this a run directory?")
    if step is None or step < 0:
        raise RunDirError(f"step must be >= 0, got {step}")
    versions = [v for v in run.skills if v <= step]
    if not versions:
        raise RunDirError(f"{run.root}: no skill version at or before step {step}.")
    v = max(versions)
    return run.skills[v], f"step {step} (skill_v{v:04d}.md)"


def skill_diff(run_dir: Path, step_a: int | None = None, step_b: int | None = None) -> str:
    """Unified diff text of the skill after ``step_a`` (default initial) vs ``step_b`` (best)."""
    run = load_run(run_dir)
    a, label_a = skill_at(run, step_a, default="initial")
    b, label_b = skill_at(run, step_b, default="best")
    lines = difflib.unified_diff(
        text_lines(a), text_lines(b), fromfile=label_a, tofile=label_b, lineterm=""
    )
    return "\n".join(lines)


def diff_rows(a: str, b: str) -> list[tuple[str, str]]:
    """A full line diff as ``(tag, line)`` with tag in ``" "``, ``"-"``, ``"+"``."""
    rows: list[tuple[str, str]] = []
    la, lb = text_lines(a), text_lines(b)
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, la, lb, autojunk=False).get_opcodes():
        if op == "equal":
            rows += [(" ", x) for x in la[i1:i2]]
            continue
        rows += [("-", x) for x in la[i1:i2]]
        rows += [("+", x) for x in lb[j1:j2]]
    return rows


def diff_html(a: str, b: str) -> str:
    """An HTML ``<pre>`` rendering of ``diff_rows`` (classes ``add``/``del``/``ctx``)."""
    cls = {" ": "ctx", "-": "del", "+": "add"}
    body = "".join(
        f'<span class="{cls[t]}">{html.escape(t + " " + line)}</span>'
        for t, line in diff_rows(a, b)
    )
    return f'<pre class="diff">{body}</pre>'


def skill_diff_html(run_dir: Path, step_a: int | None = None, step_b: int | None = None) -> str:
    run = load_run(run_dir)
    a, label_a = skill_at(run, step_a, default="initial")
    b, label_b = skill_at(run, step_b, default="best")
    head = f"<p class='difflabel'>{html.escape(label_a)} → {html.escape(label_b)}</p>"
    return head + diff_html(a, b)


def _heading_text(line: str) -> str | None:
    s = line.strip()
    return s.lstrip("#").strip() if s.startswith("#") else None


def _entry_explains(entry: dict[str, Any], line: str) -> bool:
    """Whether a patch-log entry's edit plausibly introduced ``line``."""
    edit = entry.get("edit") or {}
    content = str(edit.get("content") or "")
    s = line.strip()
    if edit.get("op") == "description":  # a package's frontmatter line
        return s.startswith("description:") and " ".join(content.split()) in s
    if s and s in {c.strip() for c in text_lines(content)}:
        return True
    if s and s in content:
        return True
    heading = _heading_text(line)
    section = str(edit.get("section") or "")
    return bool(heading) and heading in [p.strip() for p in section.split(">")]


def _attribute(version: int, line: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
    for e in entries:
        if _entry_explains(e, line):
            edit = e.get("edit") or {}
            return {
                "source": str(e.get("source") or edit.get("source") or "reflect"),
                "version": version,
                "step": e.get("step"),
                "epoch": e.get("epoch"),
                "op": str(edit.get("op") or ""),
                "section": str(edit.get("section") or ""),
                "rationale": str(edit.get("rationale") or ""),
                "trajectory_ids": tuple(edit.get("trajectory_ids") or ()),
            }
    if not line.strip() and entries:
        # A blank line new in this version is layout around the inserted text.
        return {"source": "layout", "version": version, "step": entries[0].get("step"),
                "epoch": entries[0].get("epoch")}  # fmt: skip
    return {"source": "unattributed", "version": version}


def _carry(
    old_lines: list[str], old_attr: list[dict[str, Any]], new_lines: list[str], new_attr_fn: Any
) -> list[dict[str, Any]]:
    """Map attributions of unchanged lines across a version change; new lines via the function."""
    out: list[dict[str, Any]] = []
    sm = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal":
            out += old_attr[i1:i2]
        else:
            out += [new_attr_fn(line) for line in new_lines[j1:j2]]
    return out


def _entries_for(run: RunData, version: int) -> list[dict[str, Any]]:
    by_version = [e for e in run.patch_log if e.get("skill_version") == version]
    return by_version or [e for e in run.patch_log if e.get("step") == version]


def blame(run_dir: Path) -> list[BlameLine]:
    """Annotate every line of ``best_skill.md`` with the step/edit that produced it."""
    run = load_run(run_dir)
    if run.best_skill is None:
        raise RunDirError(f"{run.paths.best_skill} is missing: the run has not saved a skill yet.")
    if 0 not in run.skills:
        raise RunDirError(f"{run.root}/skills/skill_v0000.md (the initial skill) is missing.")
    best_v = run.best_version()
    lines = text_lines(run.skills[0])
    attr: list[dict[str, Any]] = [{"source": "initial", "version": 0}] * len(lines)
    for v in sorted(run.skills):
        if v == 0 or (best_v is not None and v > best_v):
            continue
        entries = _entries_for(run, v)
        new = text_lines(run.skills[v])
        attr = _carry(lines, attr, new, lambda line, v=v, e=entries: _attribute(v, line, e))
        lines = new
    # best_skill.md should equal the best version; any drift is shown as unattributed.
    final = text_lines(run.best_skill)
    attr = _carry(lines, attr, final, lambda _line: {"source": "unattributed"})
    return [
        BlameLine(line_no=i + 1, text=t, **a)
        for i, (t, a) in enumerate(zip(final, attr, strict=True))
    ]


__all__ = [
    "BlameLine",
    "blame",
    "diff_html",
    "diff_rows",
    "skill_at",
    "skill_diff",
    "skill_diff_html",
]
