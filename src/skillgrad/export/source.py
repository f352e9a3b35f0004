"""What an export installs: the best skill a run committed, with the name and description an
agent lists it by. Read from the sealed checkpoint (``runtime_state.json``), never from files a
hand or another tool may have changed, so the skill card's numbers are about this exact text.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillgrad.errors import RunDirError, SkillgradError
from skillgrad.runs.integrity import check_no_links, read_state
from skillgrad.runs.io import read_json, read_text
from skillgrad.runs.layout import RunPaths
from skillgrad.runs.view import is_run_dir, read_summary
from skillgrad.skill.package import (
    MAX_DESCRIPTION,
    MAX_NAME,
    SKILL_FILE,
    SkillPackage,
    is_package_text,
)

_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


class ExportError(SkillgradError):
    """An export that cannot be written as asked (destination, name, existing files)."""


@dataclass(frozen=True)
class RunSkill:
    """The best skill of a finished run, ready to lay out for an agent.

    ``files`` maps package-relative paths to text; a single-file skill is ``{"SKILL.md": body}``
    with no frontmatter (``package`` False), a package keeps its own ``SKILL.md``."""

    run_dir: Path
    name: str
    description: str
    files: dict[str, str]
    package: bool
    summary: dict[str, Any]
    config: dict[str, Any]

    @property
    def body(self) -> str:
        """The instructions an always-on rule file carries: a package rendered as its prompt
        (SKILL.md body, then each reference under a heading naming its path)."""
        if not self.package:
            return self.files[SKILL_FILE]
        bundle = SkillPackage.from_files(self.files)
        return bundle.render_prompt()


def slugify(text: str) -> str:
    """A safe skill name: lowercase ASCII letters, digits and single hyphens, at most 64
    characters; '' when nothing of ``text`` survives."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    return slug[:MAX_NAME].rstrip("-")


def check_name(name: str) -> str:
    """``name`` when it is a valid skill name, else an ExportError saying how to fix it."""
    if len(name) > MAX_NAME or not _SLUG.match(name):
        suggestion = slugify(name) or "my-skill"
        raise ExportError(
            f"--name {name!r} is not a skill name: use lowercase letters, digits and single "
            f"hyphens, at most {MAX_NAME} characters (e.g. --name {suggestion})"
        )
    return name


def one_line(text: str, limit: int = MAX_DESCRIPTION) -> str:
    """Whitespace collapsed to single spaces and cut to ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def load_run_skill(
    run_dir: Path, name: str | None = None, description: str | None = None
) -> RunSkill:
    """The best skill of the finished run in ``run_dir``; RunDirError when it is not one (no
    summary, a damaged or edited checkpoint, a symlink inside)."""
    run_dir = Path(run_dir)
    if not is_run_dir(run_dir):
        p = RunPaths(run_dir)
        raise RunDirError(
            f"{run_dir}: not a skillgrad run directory (no {p.config.name}, {p.history.name} or "
            f"{p.events.name}); pass <output_root>/<run_name>, the folder with {p.best_skill.name}"
        )
    check_no_links(run_dir)
    paths = RunPaths(run_dir)
    summary = read_summary(run_dir)
    if summary is None:
        raise RunDirError(
            f"{run_dir}: no {paths.summary.name}, so the run has not finished; finish it (re-run "
            "the same skillgrad train command) before exporting its skill"
        )
    state = read_state(paths)
    if state is None or not isinstance(state[0].get("best_skill"), str):
        raise RunDirError(f"{paths.state}: missing; a finished run has it. Restore the file.")
    best = state[0]["best_skill"]
    config = read_json(paths.config, {})
    config = config if isinstance(config, dict) else {}
    files = SkillPackage.from_bundle(best).file_map() if is_package_text(best) else None
    package = files is not None
    pkg_name = SkillPackage.from_files(files).name if files else None
    final = check_name(name) if name else pkg_name or _task_slug(run_dir, summary, config)
    desc = description or (
        SkillPackage.from_files(files).description if files else _default_description(summary)
    )
    return RunSkill(
        run_dir=run_dir,
        name=final,
        description=one_line(desc),
        files=files if files is not None else {SKILL_FILE: best},
        package=package,
        summary=summary,
        config=config,
    )


def task_name(summary: dict[str, Any], config: dict[str, Any]) -> str:
    """The task the run trained for: summary.json's ``task``, else config.json's ``env.task``."""
    env = config.get("env") if isinstance(config.get("env"), dict) else {}
    return str(summary.get("task") or (env or {}).get("task") or "")


def _task_slug(run_dir: Path, summary: dict[str, Any], config: dict[str, Any]) -> str:
    slug = slugify(task_name(summary, config))
    if not slug:
        raise ExportError(
            f"{run_dir}: no usable skill name in the run (task {task_name(summary, config)!r}); "
            "name it: --name my-skill"
        )
    return slug


def _default_description(summary: dict[str, Any]) -> str:
    task = one_line(str(summary.get("task") or "this"), 200)
    target = one_line(str(summary.get("target_model") or "the target model"), 200)
    return (
        f"Use for the {task} task (instructions trained with skillgrad for {target}; "
        "the skill card beside them holds the evidence)."
    )


def best_file_differs(run: RunSkill) -> bool:
    """Whether ``best_skill.md`` no longer holds what the run committed (edited by hand)."""
    path = RunPaths(run.run_dir).best_skill
    if not path.is_file():
        return False
    return read_text(path) != run.files[SKILL_FILE]


__all__ = [
    "ExportError",
    "RunSkill",
    "best_file_differs",
    "check_name",
    "load_run_skill",
    "one_line",
    "slugify",
    "task_name",
]
