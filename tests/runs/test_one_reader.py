"""``runs/view.py`` is the one reader of a run directory: the sweep and the trackers ask it for a
run's files instead of opening them (``RunPaths`` attributes) themselves, so a format change
or a validation fix is made in one place (issue 23)."""

from __future__ import annotations

import ast
from pathlib import Path

import skillgrad
from skillgrad.runs.layout import RunPaths

SRC = Path(skillgrad.__file__).parent
# the modules that read finished runs but live outside ``runs/``
CHECKED = [*sorted(SRC.glob("sweep/*.py")), SRC / "trackers.py"]
READERS = {"read_json", "read_jsonl", "read_text", "open", "load", "loads"}
METHOD_READERS = {"read_text", "read_bytes", "open"}
# every file or folder of a run that RunPaths names (a property or a path-making method)
RUN_FILES = {name for name in vars(RunPaths) if not name.startswith("_")} - {"read_by_view"}


def _names_run_file(node: ast.AST) -> bool:
    """An expression that is a run file: ``<anything>.summary``, ``paths.skill_version(0)``..."""
    if isinstance(node, ast.Call):
        node = node.func
    return isinstance(node, ast.Attribute) and node.attr in RUN_FILES


def _reads_run_file(call: ast.Call) -> bool:
    """``read_json(paths.summary)``, ``open(RunPaths(d).history)``, ``paths.state.read_text()``."""
    func = call.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
    if name in READERS and any(_names_run_file(a) for a in call.args):
        return True
    return (
        name in METHOD_READERS and isinstance(func, ast.Attribute) and _names_run_file(func.value)
    )


def _direct_reads(path: Path) -> list[str]:
    """Each call in ``path`` that reads a run file itself, as ``folder/file.py:line: call``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{path.parent.name}/{path.name}:{node.lineno}: {ast.unparse(node)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and _reads_run_file(node)
    ]


def test_the_scan_sees_a_direct_read(tmp_path: Path) -> None:
    # the check itself must catch the patterns it is meant to forbid
    sample = tmp_path / "sample.py"
    sample.write_text(
        "read_json(RunPaths(d).summary)\nread_jsonl(paths.patch_log)\n"
        "paths.state.read_text()\nopen(p.skill_version(0))\nread_json(d / 'sweep.json')\n"
    )
    assert len(_direct_reads(sample)) == 4


def test_no_run_file_is_read_outside_runs() -> None:
    assert CHECKED and all(p.exists() for p in CHECKED)
    reads = [hit for path in CHECKED for hit in _direct_reads(path)]
    assert not reads, "read these through skillgrad.runs.view:\n" + "\n".join(reads)
