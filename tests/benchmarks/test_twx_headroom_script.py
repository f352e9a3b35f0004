"""scripts/twx-headroom without a model: the Markdown table over eval JSON files written here
(scores, solved, the paired difference as ``eval --baseline`` computes it, wall time, missing and
broken cells), and the runner end to end with a stand-in ``skillgrad`` (a real subprocess that
writes what ``eval --out`` writes): the right eval commands, under the lock, resumable."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from skillgrad.evaluate import paired_comparison

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "twx-headroom"


def load_script() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("twx_headroom", str(SCRIPT))
    spec = importlib.util.spec_from_loader("twx_headroom", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


hr = load_script()


def eval_json(skill: str, scores: list[float], wall: float | None = None) -> dict[str, Any]:
    """What ``skillgrad eval --out`` writes (evaluate.evaluate_skill), episode ids as TWX's."""
    items = {f"coin-dev-{i}": {"score": s, "feedback": "f"} for i, s in enumerate(scores)}
    out: dict[str, Any] = {
        "skill": skill,
        "split": "val",
        "n": len(scores),
        "mean_score": sum(scores) / len(scores),
        "pass_rate": sum(s == 1.0 for s in scores) / len(scores),
        "items": items,
    }
    if wall is not None:
        out["headroom_cell"] = {"command": "skillgrad eval ...", "wall_seconds": wall}
    return out


def write(out: Path, game: str, target: str, skill: str, data: Any) -> None:
    path = hr.cell_path(out, game, target, skill)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")


def rows(table: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()[2:]]


def test_the_table_reports_scores_solved_the_paired_difference_and_wall_time(
    tmp_path: Path,
) -> None:
    none = eval_json("empty.md", [0.0, 0.0, 0.5, 1.0, 0.0, 0.25], wall=61.4)
    skill = eval_json("twx-coin.md", [1.0, 1.0, 0.5, 1.0, 1.0, 0.0], wall=130.0)
    write(tmp_path, "coin", "m", "none", none)
    write(tmp_path, "coin", "m", "hand-written", skill)
    table = hr.headroom_table(tmp_path, ["coin"], ["m"])
    assert table.startswith(hr.HEADER)
    base, ours = rows(table)
    assert base == ["coin", "m", "none (`empty.md`)", "0.29", "1/6", "", "61 s"]
    assert ours[:5] == ["coin", "m", "hand-written (`twx-coin.md`)", "0.75", "4/6"]
    assert ours[6] == "130 s"
    pair = paired_comparison(skill, none)  # the numbers eval --baseline prints
    low, high = pair["interval_95"]
    assert (pair["wins"], pair["losses"], pair["ties"]) == (3, 1, 2)
    assert ours[5] == f"+0.46 [{low:+.2f}, {high:+.2f}], +3 / -1 / =2, p = {pair['p_value']:.2g}"


def test_missing_broken_and_infra_failed_cells_are_said_not_raised(tmp_path: Path) -> None:
    skill = eval_json("twx-sorting.md", [1.0, 1.0, 0.0])
    skill["items"]["coin-dev-2"]["infra_error"] = "the JVM died"
    write(tmp_path, "sorting", "m", "hand-written", skill)
    write(tmp_path, "arithmetic", "m", "none", "{not json")
    write(tmp_path, "arithmetic", "m", "hand-written", {"items": {"a": {"score": "high"}}})
    write(tmp_path, "twc", "m", "none", "[" * 100_000)  # deeply nested: unreadable, no crash
    table = hr.headroom_table(tmp_path, ["sorting", "arithmetic", "twc"], ["m"])
    cells = {(r[0], r[2].split()[0]): r for r in rows(table)}
    assert cells[("sorting", "none")][3] == "(not run)"
    assert cells[("sorting", "hand-written")][4] == "2/3 (1 infra errors)"
    assert cells[("sorting", "hand-written")][5] == "(no skill: not run)"
    assert cells[("arithmetic", "none")][3] == "(unreadable (JSONDecodeError))"
    assert cells[("arithmetic", "hand-written")][3] == "(not an eval result)"
    assert cells[("twc", "none")][3].startswith("(unreadable")


def test_pending_cells_skip_those_with_a_json(tmp_path: Path) -> None:
    write(tmp_path, "coin", "a", "none", eval_json("empty.md", [0.0]))
    pending = hr.pending_cells(tmp_path, ["coin"], ["a", "b"])
    assert pending == [
        ("coin", "a", "hand-written"),
        ("coin", "b", "none"),
        ("coin", "b", "hand-written"),
    ]


STAND_IN = """
import fcntl, json, sys
from pathlib import Path
args = sys.argv[1:]
with open(Path(__file__).with_name("model.lock"), "a") as lock:
    try:  # a new open of the lock file: it must find the lock held by twx-headroom
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        args.append("UNLOCKED")
    except BlockingIOError:
        pass
with open(Path(__file__).with_name("calls.log"), "a") as log:
    log.write(json.dumps(args) + "\\n")
n = int(args[args.index("--set") + 1].split("=")[1])
skill = args[args.index("--skill") + 1]
score = 1.0 if skill.endswith("twx-coin.md") else 0.0
items = {f"coin-dev-{i}": {"score": score, "feedback": ""} for i in range(n)}
result = {"skill": skill, "split": "val", "n": n, "mean_score": score, "pass_rate": score,
          "items": items}
Path(args[args.index("--out") + 1]).write_text(json.dumps(result))
"""


def run_script(
    tmp_path: Path, stand_in: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, str]:
    argv = ["--games", "coin", "--targets", "qwen2.5-coder-0.5b", "-n", "2"]
    argv += ["--out", str(tmp_path / "cells"), "--lock", str(tmp_path / "model.lock")]
    code = hr.main([*argv, "--skillgrad", f"{sys.executable} {stand_in}", *extra])
    return code, capsys.readouterr().out


def test_the_runner_calls_eval_per_cell_under_the_lock_and_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stand_in = tmp_path / "skillgrad_stand_in.py"
    stand_in.write_text(STAND_IN, encoding="utf-8")
    code, table = run_script(tmp_path, stand_in, capsys)
    assert code == 0, table
    calls = [json.loads(x) for x in (tmp_path / "calls.log").read_text().splitlines()]
    assert [Path(c[c.index("--skill") + 1]).name for c in calls] == ["empty.md", "twx-coin.md"]
    for call in calls:
        assert call[:2] == ["eval", str(hr.ROOT / "configs" / "twx-coin.yaml")]
        assert call[call.index("--split") + 1] == "val"
        assert call[call.index("--set") + 1] == "env.options.n_val=2"
        assert call[call.index("--target_model") + 1] == "llamacpp:qwen2.5-coder-0.5b"
        assert "UNLOCKED" not in call  # each eval ran while the model lock was held
    none, skill = rows(table)
    assert none[3:5] == ["0.00", "0/2"] and skill[3:5] == ["1.00", "2/2"]
    assert skill[5] == "+1.00 [+1.00, +1.00], +2 / -0 / =0, p = 0.5"
    assert skill[6].endswith(" s")
    cell = json.loads(
        (tmp_path / "cells" / "n2" / "coin" / "qwen2.5-coder-0.5b" / "none.json").read_text()
    )
    assert cell["headroom_cell"]["wall_seconds"] >= 0 and "eval" in cell["headroom_cell"]["command"]
    code, again = run_script(tmp_path, stand_in, capsys)  # resumed: nothing runs again
    assert code == 0 and again == table
    assert len((tmp_path / "calls.log").read_text().splitlines()) == 2


def test_a_failed_eval_writes_no_cell_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stand_in = tmp_path / "failing.py"
    stand_in.write_text("import sys; sys.exit(2)\n", encoding="utf-8")
    code, table = run_script(tmp_path, stand_in, capsys)
    assert code == 1
    assert all(r[3] == "(not run)" for r in rows(table))
    assert not list((tmp_path / "cells").rglob("*.json"))
