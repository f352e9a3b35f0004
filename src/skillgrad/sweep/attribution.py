"""Edits accepted in more than one seed of a sweep configuration (per-edit attribution).

An edit is identified by its operation, file, section and content (case and whitespace
folded), read from each finished run's ``patch_log.jsonl``; the items each acceptance flipped
come from that run's ``history.json`` (``fixed`` / ``broken`` of the step). An edit accepted
by several seeds is a candidate for a reproducible gain; one accepted by a single seed may be
noise.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from skillgrad.runs.view import read_history, read_patch_log


def seed_edit_key(edit: dict[str, Any]) -> tuple[str, str, str, str]:
    """What makes two accepted edits 'the same edit' across seeds."""

    def fold(text: Any) -> str:
        return re.sub(r"\s+", " ", str(text or "")).strip().casefold()

    return (
        fold(edit.get("op")),
        fold(edit.get("file")),
        fold(edit.get("section")),
        fold(edit.get("content") or edit.get("anchor")),
    )


def repeated_edits(runs: Sequence[tuple[int, Path]], min_seeds: int = 2) -> list[dict[str, Any]]:
    """Edits accepted in at least ``min_seeds`` of the finished runs ``(seed, run_dir)``, most
    seeds first: the edit, the seeds, and per seed the step and the val items it flipped."""
    found: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for seed, run_dir in runs:
        flips = _flips(run_dir)
        for row in read_patch_log(run_dir):
            edit = row.get("edit")
            if not isinstance(edit, dict):
                continue
            entry = found.setdefault(
                seed_edit_key(edit),
                {
                    "op": edit.get("op"),
                    "file": edit.get("file", ""),
                    "section": edit.get("section"),
                    "content": edit.get("content") or edit.get("anchor"),
                    "seeds": [],
                    "per_seed": {},
                },
            )
            if seed in entry["seeds"]:
                continue
            step = row.get("step")
            entry["seeds"].append(seed)
            entry["per_seed"][str(seed)] = {"step": step, **flips.get(step, {})}
    out = [e for e in found.values() if len(e["seeds"]) >= min_seeds]
    for e in out:
        e["accepted_in"] = len(e["seeds"])
    return sorted(out, key=lambda e: (-e["accepted_in"], str(e["section"]), str(e["content"])))


def _flips(run_dir: Path) -> dict[Any, dict[str, list[str]]]:
    out: dict[Any, dict[str, list[str]]] = {}
    for rec in read_history(run_dir):
        if rec.accepted:
            out[rec.step] = {"fixed": list(rec.fixed), "broken": list(rec.broken)}
    return out


__all__ = ["repeated_edits", "seed_edit_key"]
