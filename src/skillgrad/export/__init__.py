"""``skillgrad export``: a run's best skill installed where an agent reads skills (Claude Code,
Codex, Gemini CLI, Cursor, an ``AGENTS.md``), with its skill card beside it.

``source`` reads the skill a run committed, ``layouts`` knows each agent's layout, ``card``
writes the evidence, ``write`` puts the files in place without following links or replacing
anything unasked.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from skillgrad.export.card import CARD_JSON, CARD_MD, build_card, render_card
from skillgrad.export.layouts import FORMATS, Folder, Unit, skill_units
from skillgrad.export.source import ExportError, RunSkill, best_file_differs, load_run_skill
from skillgrad.export.write import Written, write_units


@dataclass(frozen=True)
class ExportResult:
    """What ``export_run`` wrote (paths relative to ``dest``) and the card it wrote."""

    dest: Path
    name: str
    written: list[Written]
    card_path: str
    card: dict[str, object]
    best_file_edited: bool


def export_run(
    run_dir: Path,
    fmt: str,
    dest: Path,
    *,
    force: bool = False,
    sweep_dir: Path | None = None,
    name: str | None = None,
    description: str | None = None,
) -> ExportResult:
    """Export the best skill of the finished run ``run_dir`` as ``fmt`` into ``dest``."""
    if fmt not in FORMATS:
        raise ExportError(f"--to {fmt!r}: unknown format; use one of {', '.join(FORMATS)}")
    run = load_run_skill(Path(run_dir), name, description)
    units, card_dir = skill_units(run, fmt)
    card = build_card(run, fmt, _installed(units), sweep_dir)
    card_files = {CARD_MD: render_card(card), CARD_JSON: json.dumps(card, indent=2) + "\n"}
    units = _with_card(units, card_dir, card_files)
    written = write_units(Path(dest), units, force)
    return ExportResult(
        dest=Path(dest),
        name=run.name,
        written=written,
        card_path=f"{card_dir}/{CARD_MD}",
        card=card,
        best_file_edited=best_file_differs(run),
    )


def _installed(units: list[Unit]) -> list[str]:
    out: list[str] = []
    for unit in units:
        out += [f"{unit.path}/{p}" for p in unit.files] if isinstance(unit, Folder) else [unit.path]
    return out


def _with_card(units: list[Unit], card_dir: str, card_files: dict[str, str]) -> list[Unit]:
    """The card goes into the skill's own folder when it has one, else into ``card_dir``."""
    for i, unit in enumerate(units):
        if isinstance(unit, Folder) and unit.path == card_dir:
            return [*units[:i], Folder(unit.path, {**unit.files, **card_files}), *units[i + 1 :]]
    return [*units, Folder(card_dir, card_files)]


__all__ = ["FORMATS", "ExportError", "ExportResult", "RunSkill", "export_run"]
