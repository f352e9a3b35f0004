"""Config: YAML, _base_ inheritance, --set overrides, unknown keys, secrets, split leakage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skillgrad.config import load_config, redact
from skillgrad.errors import ConfigError
from skillgrad.registry import load_task
from skillgrad.session import load_splits
from skillgrad.tasks.chat import ChatTask
from skillgrad.types import Item, Score

ROOT = Path(__file__).resolve().parents[1]


def test_base_inheritance_and_overrides(tmp_path: Path) -> None:
    (tmp_path / "base.yaml").write_text("train: {batch_size: 3, seed: 7}\nenv: {task: toy}\n")
    (tmp_path / "run.yaml").write_text("_base_: base.yaml\ntrain: {batch_size: 5}\n")
    cfg = load_config(
        tmp_path / "run.yaml", ["train.learning_rate=8", "models.target=openai:gpt-4o"]
    )
    assert (cfg.train.batch_size, cfg.train.seed, cfg.train.learning_rate) == (5, 7, 8)
    assert cfg.env.task == "toy"
    assert (cfg.models.target.provider, cfg.models.target.model) == ("openai", "gpt-4o")
    assert cfg.base_dir == str(tmp_path.resolve())


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"train": {"learning_rat": 2}}, "did you mean 'train.learning_rate'"),
        ({"trian": {}}, "did you mean 'train'"),
        ({"models": {"optimizer": {"base_ulr": "x"}}}, "did you mean 'models.optimizer.base_url'"),
        ({"hardware": {"rollout_worker": 2}}, "did you mean 'hardware.rollout_workers'"),
    ],
)
def test_unknown_keys_fail_with_did_you_mean(data: dict, expected: str) -> None:
    with pytest.raises(ConfigError, match="unknown key") as err:
        load_config(data=data)
    assert expected in str(err.value)


def test_bad_values_and_bad_set_syntax_are_explained() -> None:
    with pytest.raises(ConfigError, match=r"train\.lr_scheduler"):
        load_config(data={"train": {"lr_scheduler": "step"}})
    with pytest.raises(ConfigError, match=r"section\.key=value"):
        load_config(overrides=["train.batch_size"])


def test_base_cycle_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("_base_: b.yaml\n")
    (tmp_path / "b.yaml").write_text("_base_: a.yaml\n")
    with pytest.raises(ConfigError, match="cycle"):
        load_config(tmp_path / "a.yaml")


def test_secrets_are_redacted_but_env_var_names_kept() -> None:
    cfg = load_config(
        data={
            "models": {
                "optimizer": {
                    "provider": "openai",
                    "model": "gpt-4o",
                    "api_key_env": "OPENAI_API_KEY",
                    "options": {"api_key": "sk-live-123456789", "header": "Bearer abcdefghijkl"},
                }
            }
        }
    )
    text = json.dumps(cfg.redacted_json())
    assert "sk-live-123456789" not in text and "abcdefghijkl" not in text
    assert "OPENAI_API_KEY" in text
    assert redact({"max_tokens": 5, "token": "x"}) == {"max_tokens": 5, "token": "***"}


class _Leaky(ChatTask):
    name = "leaky"

    def __init__(self, val: list[str], test: list[str]) -> None:
        self.ids = {"train": ["t0", "t1"], "val": val, "test": test}

    def load_split(self, split):  # type: ignore[no-untyped-def]
        return [Item(id=i, input=i, reference=i) for i in self.ids[split]]

    def prompt(self, item: Item) -> str:
        return str(item.input)

    def score(self, output: str, item: Item) -> Score:
        return Score(1.0, True)


def test_test_split_overlapping_selection_split_is_refused_with_ids() -> None:
    with pytest.raises(ConfigError, match=r"val and test splits overlap.*\['v2', 'v3'\]"):
        load_splits(_Leaky(["v1", "v2", "v3"], ["v2", "v3", "x"]))


def test_empty_split_and_duplicate_ids_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"test split .* is empty"):
        load_splits(_Leaky(["v1"], []))
    with pytest.raises(ConfigError, match="duplicate item ids in the val split: \\['v1'\\]"):
        load_splits(_Leaky(["v1", "v1"], ["x"]))


def test_every_config_field_has_a_description() -> None:
    from pydantic import BaseModel

    from skillgrad.config import Config
    from skillgrad.models.spec import ModelSpec

    missing: list[str] = []
    todo: list[tuple[str, type[BaseModel]]] = [("", Config), ("models.<role>.", ModelSpec)]
    while todo:
        prefix, model = todo.pop()
        for name, field in model.model_fields.items():
            if not field.description:
                missing.append(prefix + name)
            ann = field.annotation
            if isinstance(ann, type) and issubclass(ann, BaseModel) and ann is not ModelSpec:
                todo.append((f"{prefix}{name}.", ann))
    assert not missing, f"config fields without Field(description=...): {missing}"


@pytest.mark.parametrize("path", sorted((ROOT / "configs").glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_config_loads_and_names_a_task_that_accepts_its_options(path: Path) -> None:
    cfg = load_config(path)
    task = load_task(cfg.env.task, cfg.env.options)
    assert task.name == cfg.env.task


def test_every_off_on_switch_takes_a_bare_on_or_off_from_set() -> None:
    """YAML reads ``on`` / ``off`` as booleans: ``--set train.<switch>=on`` must work for every
    switch (train.parting and train.command_forms once refused it)."""
    from typing import get_args

    from skillgrad.config import TrainConfig

    switches = [
        n for n, f in TrainConfig.model_fields.items() if get_args(f.annotation) == ("off", "on")
    ]
    assert {"parting", "command_forms", "explore", "examples"} <= set(switches)
    for name in switches:
        on = load_config(overrides=[f"train.{name}=on"])
        off = load_config(overrides=[f"train.{name}=off"])
        assert (getattr(on.train, name), getattr(off.train, name)) == ("on", "off"), name
    with pytest.raises(ConfigError, match=r"train\.parting"):
        load_config(overrides=["train.parting=maybe"])
    assert load_config(overrides=["train.batch_size=3"]).train.batch_size == 3  # not a switch
