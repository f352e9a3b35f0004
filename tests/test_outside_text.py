"""Outside text through the CLI: an environment's observation holding a lone surrogate (a
Latin-1 byte read with ``surrogateescape``) crosses a real environment process into the call
cache; task data with a ``"\\udce9"`` escape loads; and ``skillgrad eval`` reports its mean
and pass rate over the same scored items, with the missing ones counted."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

from typer.testing import CliRunner

from skillgrad.cli.main import app
from skillgrad.runs.io import read_json, read_jsonl
from skillgrad.testing import ToyTask
from skillgrad.types import Trajectory

runner = CliRunner()
FAKES = Path(__file__).parent / "fakes_e2e.py"
SAFE = "Caf\ufffd"

LATIN_ENV = """
class LatinEnv:
    # what Python makes of a child's Latin-1 output under the C locale
    def reset(self, *, seed=None, options=None):
        obs = b"Caf\\xe9 is open. Say done.".decode("utf-8", "surrogateescape")
        return obs, {"task": "Say done."}

    def step(self, action):
        obs = b"Caf\\xe9 closes.".decode("utf-8", "surrogateescape")
        return obs, float(action == "done"), True, False, {}
"""

TARGETS = """
from skillgrad.errors import TransientModelError
from skillgrad.testing import FunctionBackend, user_text

DOWN = {down!r}


def says_done(request):
    return "done"


def toy(request):
    word = user_text(request).removeprefix("Word: ").strip()
    if word in DOWN:
        raise TransientModelError("fake endpoint down for " + word)
    return word.upper()


class DoneTarget(FunctionBackend):
    def __init__(self):
        super().__init__(says_done, "function:done")


class FlakyTarget(FunctionBackend):
    def __init__(self):
        super().__init__(toy, "function:flaky")
"""


def _targets(tmp: Path, down: set[str] = frozenset()) -> Path:  # type: ignore[assignment]
    path = tmp / "targets.py"
    path.write_text(TARGETS.format(down=sorted(down)), encoding="utf-8")
    return path


def test_an_observation_with_a_lone_surrogate_evaluates_and_is_cached(tmp_path: Path) -> None:
    (tmp_path / "latin_env.py").write_text(LATIN_ENV, encoding="utf-8")
    target = f"{_targets(tmp_path)}:DoneTarget"
    config = tmp_path / "env.yaml"
    config.write_text(
        f"""
models:
  optimizer: {{provider: function, model: "{target}"}}
  target: {{provider: function, model: "{target}"}}
env:
  task: environment
  output_root: "{tmp_path / "runs"}"
  options: {{env: "{tmp_path / "latin_env.py"}:LatinEnv", n_train: 1, n_val: 1, n_test: 2}}
""",
        encoding="utf-8",
    )
    (tmp_path / "skill.md").write_text("Act.\n", encoding="utf-8")
    args = ["eval", str(config), "--skill", str(tmp_path / "skill.md"), "--split", "test"]
    out = tmp_path / "result.json"
    first = runner.invoke(app, [*args, "--out", str(out)])
    assert first.exit_code == 0, first.output
    assert "mean score 1.0000, pass rate 1.0000 over 2 items" in first.output
    again = runner.invoke(app, args)  # the cached calls and results read back
    assert again.exit_code == 0 and "mean score 1.0000" in again.output
    [db] = (tmp_path / "runs" / "_eval").glob("*/calls.sqlite")
    with closing(sqlite3.connect(db)) as conn:  # the results table as a resume reads it
        stored = [Trajectory.from_json(json.loads(row[0])) for row in conn.execute(
            "SELECT trajectory FROM results")]  # fmt: skip
    assert len(stored) == 2
    for traj in stored:
        assert traj.infra_error is None and traj.score.value == 1.0
        seen = " ".join(m.content for m in traj.messages)
        assert f"{SAFE} is open" in seen and "\udce9" not in seen


def _toy_config(tmp: Path, target: str) -> Path:
    config = tmp / "toy.yaml"
    config.write_text(
        f"""
train: {{num_epochs: 1, batch_size: 4}}
models:
  optimizer: {{provider: function, model: "{FAKES}:FakeOptimizer"}}
  target: {{provider: function, model: "{target}"}}
env: {{task: toy, output_root: "{tmp / "runs"}", run_name: toy}}
""",
        encoding="utf-8",
    )
    return config


def test_eval_scores_and_passes_over_the_scored_items_and_counts_the_missing(
    tmp_path: Path,
) -> None:
    trained = runner.invoke(app, ["train", str(_toy_config(tmp_path, f"{FAKES}:FakeTarget"))])
    assert trained.exit_code == 0, trained.output
    run = tmp_path / "runs" / "toy"
    (run / "transfer.jsonl").write_text(  # a row from before the missing count was recorded
        json.dumps({"skill": "old.md", "split": "val", "n": 6, "mean_score": 0.5,
                    "pass_rate": 0.5, "setup": "toy / old"}) + "\n", encoding="utf-8",
    )  # fmt: skip
    down = {item.input for item in ToyTask().load_split("val")[:2]}
    flaky = _toy_config(tmp_path, f"{_targets(tmp_path, down)}:FlakyTarget")
    out = tmp_path / "result.json"
    skill = run / "best_skill.md"
    result = runner.invoke(
        app, ["eval", str(flaky), "--skill", str(skill), "--split", "val", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert (
        "val: mean score 1.0000, pass rate 1.0000 over 4 scored items; 2 of 6 missing"
        in result.output
    )
    data = read_json(out)
    assert (data["n"], data["missing"], data["mean_score"], data["pass_rate"]) == (6, 2, 1.0, 1.0)
    row = read_jsonl(run / "transfer.jsonl")[-1]
    assert (row["n"], row["missing"], row["mean_score"], row["pass_rate"]) == (6, 2, 1.0, 1.0)
    report = runner.invoke(app, ["report", str(run)])  # old and new rows both read
    assert report.exit_code == 0, report.output
    assert "Transfer evaluations" in report.output and "old.md" in report.output


def test_task_data_with_a_lone_surrogate_escape_trains(tmp_path: Path) -> None:
    rows = [
        {"id": f"Caf\udce9-{i}", "question": f"Caf\udce9 {i}?", "answer": "done"} for i in range(9)
    ]
    data = tmp_path / "data.jsonl"
    # ensure_ascii: the lone surrogate written as the JSON escape "\\udce9" (valid JSON)
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    target = f"{_targets(tmp_path)}:DoneTarget"
    config = tmp_path / "data.yaml"
    config.write_text(
        f"""
train: {{num_epochs: 1, batch_size: 3, headroom_check: false}}
models:
  optimizer: {{provider: function, model: "{FAKES}:FakeOptimizer"}}
  target: {{provider: function, model: "{target}"}}
env:
  task: data
  output_root: "{tmp_path / "runs"}"
  options: {{file: "{data}", prompt: "Question: {{question}}", id_field: id}}
""",
        encoding="utf-8",
    )
    result = runner.invoke(app, ["train", str(config), "--quiet"])
    assert result.exit_code == 0, result.output
    splits = read_json(tmp_path / "runs" / "data" / "splits.json")
    ids = sorted(i for split in splits.values() for i in split)
    assert ids == sorted(f"{SAFE}-{i}" for i in range(9))
