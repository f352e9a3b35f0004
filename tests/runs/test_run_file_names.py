"""Only ``skillgrad.runs`` names the files of a run directory: every other module reaches them
through ``RunPaths`` (``runs/layout.py``) or the reader ``runs/view.py``, so a file renamed or
added is one change in one place. Checked on the code's string literals (docstrings and
comments may name files: they explain)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from skillgrad.runs.layout import RunPaths

SRC = Path(__file__).resolve().parents[2] / "src" / "skillgrad"
PATHS = RunPaths(Path("run"))
RUN_FILES = sorted(
    {
        getattr(PATHS, name).name
        for name in dir(RunPaths)
        if isinstance(getattr(RunPaths, name), property) and name != "root"
    }
    - {"figures"}
)
NAMED = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, RUN_FILES)) + r")(?!\w|\.\w)")


def names_in(code: str) -> list[tuple[int, str]]:
    """``(line, name)`` for each run-file name in a string literal of ``code`` (f-strings
    included), docstrings and bare expression strings left out."""
    tree = ast.parse(code)
    skip = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    return [
        (node.lineno, name)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
        for name in NAMED.findall(node.value)
    ]


def test_the_run_files_are_known() -> None:
    assert {"history.json", "runtime_state.json", "summary.json", "events.jsonl"} <= set(RUN_FILES)


def test_no_module_outside_runs_names_a_run_file() -> None:
    outside = [p for p in sorted(SRC.rglob("*.py")) if p.relative_to(SRC).parts[0] != "runs"]
    hits = [
        f"{path.relative_to(SRC)}:{line}: {name}"
        for path in outside
        for line, name in names_in(path.read_text(encoding="utf-8"))
    ]
    assert not hits, "use RunPaths (runs/layout.py) instead:\n" + "\n".join(hits)


@pytest.mark.parametrize(
    ("code", "found"),
    [
        ('x = root / "summary.json"\n', ["summary.json"]),
        ('x = f"{root}/history.json: damaged"\n', ["history.json"]),
        ('"""Reads summary.json."""\nx = 1\n', []),
        ("x = 'my_summary.json'\n", []),
        ('t = "report.html.j2"\n', []),
    ],
)
def test_the_check_itself(code: str, found: list[str]) -> None:
    assert [name for _, name in names_in(code)] == found
