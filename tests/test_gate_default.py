"""The default gate rule is ``paired`` (docs/gate.md, "Why paired is the default"): a config that
does not name ``train.gate_rule`` resolves to it; a val split too small for it is refused before
anything is spent, naming both ways out; and a run started under the former default (``strict``,
recorded in its config.json or predating the setting) keeps its rule when it resumes. The same
holds for worked examples and exploration, on by default since round 5 (docs/method.md, "The
defaults"): a run predating them resumes with both off."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from skillgrad.cli import app
from skillgrad.config import load_config
from skillgrad.runs.io import read_json, read_jsonl

TOY = Path(__file__).parent / "fakes_e2e.py"
OLD_RUN = Path(__file__).parent / "fixtures" / "old_run_b45e323"
runner = CliRunner()


def _config(tmp_path: Path, train: str = "", options: str = "") -> Path:
    path = tmp_path / "small.yaml"
    path.write_text(
        f"""
train: {{num_epochs: 1, batch_size: 4, {train}}}
models:
  optimizer: {{provider: function, model: "{TOY}:FakeOptimizer"}}
  target: {{provider: function, model: "{TOY}:FakeTarget"}}
env: {{task: toy, output_root: "{tmp_path / "runs"}", options: {{{options}}}}}
"""
    )
    return path


def test_a_config_without_gate_rule_resolves_to_paired(tmp_path: Path) -> None:
    printed = runner.invoke(app, ["config", str(_config(tmp_path))])
    assert printed.exit_code == 0, printed.output
    assert yaml.safe_load(printed.output)["train"]["gate_rule"] == "paired"
    named = runner.invoke(app, ["config", str(_config(tmp_path, "gate_rule: strict"))])
    assert yaml.safe_load(named.output)["train"]["gate_rule"] == "strict"


def test_a_val_split_too_small_for_paired_is_refused_naming_both_ways_out(
    tmp_path: Path,
) -> None:
    # 3 val items at 90% confidence: the best p-value is 1/8, so no gain can pass
    cfg = _config(tmp_path, options="n_val: 3")
    refused = runner.invoke(app, ["train", str(cfg), "--quiet"])
    assert refused.exit_code == 2, refused.output
    assert refused.exception is None or isinstance(refused.exception, SystemExit)
    text = " ".join(refused.output.split())
    assert "Traceback" not in text
    assert "no achievable gain can pass the paired" in text and "on 3 items" in text
    assert "Use more val items" in text and "train.gate_rule: strict" in text
    assert "--no-headroom-check" in text
    run = tmp_path / "runs/small"
    summary = read_json(run / "summary.json")
    assert summary["status"] == "no_headroom"
    assert summary["usage"].get("optimizer", {}).get("calls", 0) == 0
    # the second way out, taken: the same split trains under strict
    strict = runner.invoke(
        app, ["train", str(cfg), "--quiet", "--fresh", "--set", "train.gate_rule=strict"]
    )
    assert strict.exit_code == 0, strict.output
    assert read_json(tmp_path / "runs/small-2/summary.json")["gate_rule"] == "strict"


@pytest.fixture
def old_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run made under the former default (``tests/fixtures/old_run_b45e323``), its config
    file leaving ``train.gate_rule`` unset, ready to resume for a second epoch."""
    shutil.copytree(OLD_RUN / "old_run", tmp_path / "old_run")
    config = (OLD_RUN / "config.yaml").read_text().replace("num_epochs: 1", "num_epochs: 2")
    assert "gate_rule" not in config
    (tmp_path / "config.yaml").write_text(config)
    monkeypatch.chdir(tmp_path)  # env.output_root is "."
    return tmp_path / "old_run"


def _resumed_rules(run: Path) -> list[str]:
    """The gate rule of every gated step the resumed epoch ran (the fixture holds steps 1-2);
    a step no gate decided records none."""
    history = [r for r in read_json(run / "history.json") if r["step"] > 2]
    assert all(r["gate_rule"] is None for r in history if r["gate_total"] == 0)
    return [r["gate_rule"] for r in history if r["gate_total"] > 0]


def _resume(*extra: str) -> str:
    # on past the reward ceiling, so the resumed epoch runs gated steps
    on = ["--set", "train.stop_at_ceiling=false"]
    out = runner.invoke(app, ["train", "config.yaml", "--quiet", *on, *extra])
    assert out.exit_code == 0, out.output
    return out.output


def test_a_run_recorded_under_strict_keeps_it_on_resume(old_run: Path) -> None:
    assert read_json(old_run / "config.json")["train"]["gate_rule"] == "strict"
    _resume()
    rules = _resumed_rules(old_run)
    assert rules and set(rules) == {"strict"}
    assert read_json(old_run / "summary.json")["gate_rule"] == "strict"
    assert read_json(old_run / "config.json")["train"]["gate_rule"] == "strict"


def test_a_run_predating_gate_rule_resumes_under_strict(old_run: Path) -> None:
    from skillgrad.config import with_former_defaults

    stored = read_json(old_run / "config.json")
    del stored["train"]["gate_rule"]
    (old_run / "config.json").write_text(json.dumps(stored))
    assert with_former_defaults(stored)["train"]["gate_rule"] == "strict"
    _resume()
    rules = _resumed_rules(old_run)
    assert rules and set(rules) == {"strict"}
    start = [e for e in read_jsonl(old_run / "events.jsonl") if e["event"] == "run_start"]
    assert start[-1]["config"]["train"]["gate_rule"] == "strict"


def test_a_rule_named_in_the_config_is_still_a_changed_config(old_run: Path) -> None:
    changed = runner.invoke(
        app, ["train", "config.yaml", "--quiet", "--set", "train.gate_rule=paired"]
    )
    assert changed.exit_code == 2, changed.output
    assert "train.gate_rule: 'strict' -> 'paired'" in changed.output


def test_a_new_run_of_the_same_config_gets_paired(tmp_path: Path) -> None:
    cfg = load_config(_config(tmp_path))
    assert cfg.train.gate_rule == "paired" and "gate_rule" not in cfg.train.model_fields_set


def test_a_config_without_them_has_worked_examples_and_exploration_on(tmp_path: Path) -> None:
    printed = runner.invoke(app, ["config", str(_config(tmp_path))])
    train = yaml.safe_load(printed.output)["train"]
    assert (train["examples"], train["explore"]) == ("on", "on")
    run = runner.invoke(app, ["train", str(_config(tmp_path)), "--quiet"])
    assert run.exit_code == 0, run.output
    history = read_json(tmp_path / "runs/small/history.json")
    # the empty skill fails the toy's train items: step 1 explores them
    assert history[0]["explore_attempts"] > 0


def test_a_run_predating_examples_and_exploration_resumes_without_them(old_run: Path) -> None:
    stored = read_json(old_run / "config.json")["train"]
    assert "examples" not in stored and "explore" not in stored
    before = len(read_json(old_run / "history.json"))
    _resume()
    start = [e for e in read_jsonl(old_run / "events.jsonl") if e["event"] == "run_start"]
    train = start[-1]["config"]["train"]
    assert (train["examples"], train["explore"]) == ("off", "off")
    resumed = read_json(old_run / "history.json")[before:]
    assert resumed and all(r["explore_attempts"] == 0 for r in resumed)
    log = read_jsonl(old_run / "patch_log.jsonl")
    assert all(r["edit"].get("source") != "example" for r in log)
    # naming the new default in the config is a changed config, as for the gate rule
    changed = runner.invoke(app, ["train", "config.yaml", "--quiet", "--set", "train.explore=on"])
    assert changed.exit_code == 2 and "train.explore: 'off' -> 'on'" in changed.output
