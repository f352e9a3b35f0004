"""Where each agent reads skills, and the files an export lays out there.

- ``claude-code``: ``.claude/skills/NAME/SKILL.md`` (Claude Code's project skills);
- ``codex``: ``.agents/skills/NAME/SKILL.md`` (Codex's repository skills, the Agent Skills
  folder other agents share);
- ``gemini``: ``.gemini/skills/NAME/SKILL.md`` (Gemini CLI's workspace skills);
- ``cursor``: ``.cursor/rules/NAME.mdc`` (a project rule the agent attaches by its description);
- ``agents-md``: a section of ``AGENTS.md`` between ``<!-- skillgrad:begin NAME -->`` and
  ``<!-- skillgrad:end NAME -->``, so exporting again replaces only that section.

A skill folder carries the skill card beside ``SKILL.md``; a rule file or a section has its
card in ``.skillgrad/FORMAT/NAME/`` (one per format, so exports to both never collide).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

from skillgrad.export.source import ExportError, RunSkill
from skillgrad.skill.package import SKILL_FILE, split_frontmatter

SKILL_DIRS = {
    "claude-code": ".claude/skills",
    "codex": ".agents/skills",
    "gemini": ".gemini/skills",
}
RULE_DIRS = {"cursor": ".cursor/rules"}
AGENTS_FILE = "AGENTS.md"
CARD_ROOT = ".skillgrad"
FORMATS = (*SKILL_DIRS, *RULE_DIRS, "agents-md")
MARKER = re.compile(r"^<!-- skillgrad:(begin|end) ([a-z0-9-]+) -->$")
_MARKERISH = re.compile(r"<!--\s*skillgrad:(begin|end)", re.IGNORECASE)


@dataclass(frozen=True)
class Folder:
    """A folder the export owns whole: written fresh, replaced whole with ``--force``."""

    path: str
    files: dict[str, str]


@dataclass(frozen=True)
class File:
    """One file the export owns whole."""

    path: str
    text: str


@dataclass(frozen=True)
class Section:
    """The skill's marked section in a shared file; the rest of the file is left as it is."""

    path: str
    name: str
    text: str


Unit = Folder | File | Section


def skill_units(run: RunSkill, fmt: str) -> tuple[list[Unit], str]:
    """The skill's files for ``fmt`` and the folder its card goes to (relative paths)."""
    if fmt in SKILL_DIRS:
        folder = f"{SKILL_DIRS[fmt]}/{run.name}"
        files = {**run.files, SKILL_FILE: skill_md(run)}
        return [Folder(folder, files)], folder
    card_dir = f"{CARD_ROOT}/{fmt}/{run.name}"
    if fmt in RULE_DIRS:
        return [File(f"{RULE_DIRS[fmt]}/{run.name}.mdc", cursor_rule(run))], card_dir
    if fmt == "agents-md":
        return [Section(AGENTS_FILE, run.name, agents_section(run, card_dir))], card_dir
    raise ExportError(f"--to {fmt!r}: unknown format; use one of {', '.join(FORMATS)}")


def skill_md(run: RunSkill) -> str:
    """``SKILL.md`` with the frontmatter every Agent Skills reader needs (``name`` equal to its
    folder's name, ``description``); a package's other frontmatter keys are kept."""
    front, body = split_frontmatter(run.files[SKILL_FILE]) if run.package else (None, run.body)
    wanted = {"name": run.name, "description": run.description}
    if front is not None and all(front.get(k) == v for k, v in wanted.items()):
        return run.files[SKILL_FILE]  # the package's own SKILL.md, byte for byte
    merged = {**(front or {}), **wanted}
    return f"---\n{_yaml(merged)}---\n\n{_ending(body)}"


def cursor_rule(run: RunSkill) -> str:
    """A Cursor project rule: attached when the agent judges the description relevant (no
    globs, not always applied)."""
    head = _yaml({"description": run.description})
    return f"---\n{head}globs:\nalwaysApply: false\n---\n\n{_ending(run.body)}"


def agents_section(run: RunSkill, card_dir: str) -> str:
    """The marked ``AGENTS.md`` section: heading, description, the skill's instructions."""
    body = run.body.strip("\n")
    for number, line in enumerate(body.split("\n"), 1):
        if _MARKERISH.search(line):
            raise ExportError(
                f"the skill's line {number} looks like an AGENTS.md section marker "
                f"({line[:80]!r}); it would break the section. Remove that line from the "
                "skill, or export with another --to"
            )
    return "\n".join(
        [
            f"<!-- skillgrad:begin {run.name} -->",
            f"## {run.name}",
            "",
            run.description,
            "",
            body,
            "",
            f"(Trained with skillgrad; evidence: {card_dir}/SKILL_CARD.md)",
            f"<!-- skillgrad:end {run.name} -->",
        ]
    )


def merge_section(existing: str, section: Section, where: str) -> tuple[str, bool]:
    """``existing`` with ``section`` in place of its marked section of the same name (or
    appended), and whether one was replaced; ExportError naming the line of a broken marker."""
    lines = existing.split("\n")
    spans: dict[str, tuple[int, int]] = {}
    open_name, start = "", 0
    for i, line in enumerate(lines):
        m = MARKER.match(line.rstrip("\r"))
        if m is None:
            if _MARKERISH.search(line):
                raise _marker_error(where, i, "a skillgrad marker this version cannot read")
            continue
        kind, name = m.groups()
        if kind == "begin" and not open_name and name not in spans:
            open_name, start = name, i
        elif kind == "end" and name == open_name:
            spans[name], open_name = (start, i), ""
        else:
            raise _marker_error(where, i, f"an unmatched or repeated {kind} marker of {name!r}")
    if open_name:
        raise _marker_error(where, start, f"the begin marker of {open_name!r} has no end marker")
    new = section.text.split("\n")
    if section.name in spans:
        a, b = spans[section.name]
        return "\n".join([*lines[:a], *new, *lines[b + 1 :]]), True
    head = existing.rstrip("\n")
    return (f"{head}\n\n" if head else "") + section.text + "\n", False


def _marker_error(where: str, index: int, what: str) -> ExportError:
    return ExportError(
        f"{where}:{index + 1}: {what}; fix the markers by hand (each section is "
        "'<!-- skillgrad:begin NAME -->' ... '<!-- skillgrad:end NAME -->'), then export again"
    )


def _ending(body: str) -> str:
    """``body`` without leading blank lines, ending in exactly one newline."""
    return body.strip("\n") + "\n"


def _yaml(mapping: dict[str, object]) -> str:
    """Frontmatter lines: safe YAML, one line per scalar (any text is quoted as needed)."""
    return yaml.safe_dump(mapping, sort_keys=False, allow_unicode=True, width=1_000_000)


__all__ = [
    "AGENTS_FILE",
    "CARD_ROOT",
    "FORMATS",
    "File",
    "Folder",
    "Section",
    "Unit",
    "agents_section",
    "cursor_rule",
    "merge_section",
    "skill_md",
    "skill_units",
]
