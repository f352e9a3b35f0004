"""``skillgrad.fit`` / ``afit``: the Python API, its example script, and its input checks."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import skillgrad
from skillgrad.errors import ConfigError, DataError
from skillgrad.models.function import FunctionBackend
from skillgrad.runs.records import StepRecord

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "fit_quickstart.py"
sys.path.insert(0, str(EXAMPLE.parent))
import fit_quickstart as ex  # noqa: E402


@pytest.mark.parametrize("mode", ["plain", "--async"])
def test_example_script_trains_with_fakes(tmp_path: Path, mode: str) -> None:
    args = [sys.executable, str(EXAMPLE), *([mode] if mode != "plain" else ["-"]), str(tmp_path)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "val 0.00 -> 1.00" in done.stdout
    assert ("test best None" in done.stdout) == (mode == "--async")  # no test split there
    assert "Always answer with the word in UPPERCASE." in done.stdout


def test_fit_returns_best_skill_history_summary_and_resumes(tmp_path: Path) -> None:
    target = FunctionBackend(ex.target, name="function:upper")
    kwargs: dict[str, Any] = dict(
        scorer="exact", optimizer=ex.optimizer, target=target, output_dir=tmp_path
    )
    train, val, test = (
        ex.data(ex.WORDS[:4], "tr"),
        ex.data(ex.WORDS[4:8], "va"),
        ex.data(ex.WORDS[8:], "te"),
    )
    result = skillgrad.fit(train, val, test, **kwargs, **ex.OPTIONS)
    assert ex.RULE in result.best_skill
    assert result.history and all(isinstance(r, StepRecord) for r in result.history)
    assert result.summary["test_best"] == 1.0 and result.summary["test_initial"] == 0.0
    assert (result.run_dir / "best_skill.md").exists() and result.run_dir.parent == tmp_path
    calls = len(target.calls)
    again = skillgrad.fit(train, val, test, **kwargs, **ex.OPTIONS)  # same arguments: resumes
    assert again.run_dir == result.run_dir and again.best_skill == result.best_skill
    assert len(target.calls) == calls  # every call replayed from the run's cache
    more = skillgrad.fit(train, val, test, **kwargs, **{**ex.OPTIONS, "batch_size": 2})
    assert more.run_dir != result.run_dir  # different options: a different run directory


def test_scorer_as_function_returning_float_and_items_as_objects(tmp_path: Path) -> None:
    items = [skillgrad.Item(f"i{n}", w, w.upper()) for n, w in enumerate(ex.WORDS)]
    result = skillgrad.fit(
        items[:4],
        items[4:8],
        scorer=lambda output, item: 1.0 if output == item.reference else 0.0,
        optimizer=ex.optimizer,
        target=ex.target,
        output_dir=tmp_path,
        run_name="my run: [v1]/x",
        **ex.OPTIONS,
    )
    assert result.run_dir.name == "my-run-v1-x"
    assert result.summary["test_best"] is None and result.summary["val_best"] == 1.0
    assert "test score" in (result.run_dir / "report.md").read_text()


def test_bad_inputs_fail_with_located_errors(tmp_path: Path) -> None:
    common: dict[str, Any] = dict(optimizer=ex.optimizer, target=ex.target, output_dir=tmp_path)
    val = ex.data(ex.WORDS[4:8], "va")
    with pytest.raises(DataError, match=r"trainset\[0\]: missing \['input'\]"):
        skillgrad.fit([{"id": "a"}], val, scorer="exact", **common)
    with pytest.raises(DataError, match=r"trainset\[1\]: unknown keys \['answer'\]"):
        skillgrad.fit(
            [{"id": "a", "input": "x"}, {"id": "b", "input": "y", "answer": "Y"}],
            val,
            scorer="exact",
            **common,
        )
    with pytest.raises(ConfigError, match="unknown scorer 'exactt'"):
        skillgrad.fit(ex.data(["a"], "tr"), val, scorer="exactt", **common)
    with pytest.raises(ConfigError, match=r"train\.num_epoch"):
        skillgrad.fit(ex.data(["a"], "tr"), val, scorer="exact", num_epoch=2, **common)
    with pytest.raises(ConfigError, match="overlap"):
        skillgrad.fit(val, val, scorer="exact", **common)


def test_fit_inside_a_running_loop_points_to_afit(tmp_path: Path) -> None:
    async def inside() -> None:
        skillgrad.fit(
            ex.data(["a"], "tr"),
            ex.data(["b"], "va"),
            scorer="exact",
            optimizer=ex.optimizer,
            target=ex.target,
            output_dir=tmp_path,
        )

    with pytest.raises(ConfigError, match=r"await skillgrad.afit"):
        asyncio.run(inside())


def test_a_changed_scorer_function_is_a_new_run(tmp_path: Path) -> None:
    common: dict[str, Any] = dict(
        optimizer=ex.optimizer, target=ex.target, output_dir=tmp_path, **ex.OPTIONS
    )
    train, val = ex.data(ex.WORDS[:4], "tr"), ex.data(ex.WORDS[4:8], "va")
    strict = skillgrad.fit(train, val, scorer=lambda o, i: o == i.reference, **common)
    lenient = skillgrad.fit(train, val, scorer=lambda o, i: o.lower() == i.input, **common)
    assert strict.run_dir != lenient.run_dir
    assert lenient.summary["val_initial"] == 1.0  # scored by the new function, not replayed
