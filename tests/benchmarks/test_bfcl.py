"""``env.task: bfcl`` on BFCL's shipped data: the loader, the checker against BFCL's own possible
answers (every value accepted, documented mutations refused), scoring and feedback, splits,
the prompt, and the errors for missing or changed data.

The data comes from the registry wheel (``skillgrad data pull bfcl``; ``scripts/test`` runs it,
and the fixture pulls it when it is missing: a package-registry fetch, nothing else)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from bfcl_variants import canonical, render, variants
from typer.testing import CliRunner

from skillgrad.benchmarks.bfcl import BfclBenchmark
from skillgrad.benchmarks.bfcl.data import (
    BUNDLE,
    CATEGORIES,
    UNSATISFIABLE,
    category_of,
    read_entries,
)
from skillgrad.benchmarks.bfcl.score import score_reply
from skillgrad.cli.main import app
from skillgrad.errors import AssetError, ConfigError
from skillgrad.registry import load_task
from skillgrad.skill.document import approx_tokens
from skillgrad.tasks.base import task_abilities
from skillgrad.testing import FunctionBackend
from skillgrad.train.examples import choose_example
from skillgrad.train.screens.guard import ExampleGuard
from skillgrad.types import Message, Score, Trajectory

CALL_CATEGORIES = [c for c, (_, kind) in CATEGORIES.items() if kind == "calls"]
SIZES = {  # BFCL v4's file sizes, minus the items no answer can pass
    "simple": 400,
    "multiple": 200,
    "parallel": 200,
    "parallel_multiple": 200,
    "irrelevance": 240,
    "live_simple": 256,
    "live_multiple": 1050,
    "live_parallel": 16,
    "live_parallel_multiple": 24,
    "live_irrelevance": 884,
    "live_relevance": 16,
}


@pytest.fixture(scope="module", autouse=True)
def bfcl_data() -> Path:
    return BUNDLE.pull()


@pytest.mark.parametrize("category", list(CATEGORIES))
def test_every_category_loads_with_its_known_size(category: str) -> None:
    entries = read_entries(category)
    assert len(entries) == SIZES[category]
    assert len({e.id for e in entries}) == len(entries)
    kind = CATEGORIES[category][1]
    assert all((e.gold is not None) == (kind == "calls") for e in entries)
    assert all(e.messages[-1]["role"] == "user" for e in entries)
    assert all(e.functions for e in entries) or kind == "no_call"  # 4 irrelevance items have none


@pytest.mark.parametrize("category", CALL_CATEGORIES)
def test_checker_agrees_with_bfcl_possible_answers(category: str) -> None:
    """Each gold answer rendered as calls, in every accepted form, passes with 1.0; each
    documented mutation is refused with less. (The same replies were also run through BFCL's
    own checker once, see docs/benchmarks.md: the verdicts agree.)"""
    wrong, count = [], 0
    for entry in read_entries(category):
        for label, reply, accepted in variants(entry):
            count += 1
            score = score_reply(reply, "calls", entry.gold or [], entry.functions)
            if score.passed != accepted or (score.value == 1.0) != accepted:
                wrong.append(f"{entry.id} {label}: {score}")
    assert not wrong, f"{len(wrong)} of {count} verdicts differ:\n" + "\n".join(wrong[:10])
    assert count > 20 * SIZES[category] // 10  # many forms per item, not a few


def test_unsatisfiable_items_are_exactly_those_no_answer_passes() -> None:
    failing = set()
    for category in ("live_simple", "live_multiple"):
        for entry in read_entries(category, unsatisfiable=True):
            reply = render(canonical(entry))
            if not score_reply(reply, "calls", entry.gold or [], entry.functions).passed:
                failing.add(entry.id)
    assert failing == set(UNSATISFIABLE)


def _entry(category: str, entry_id: str):  # type: ignore[no-untyped-def]
    return next(e for e in read_entries(category) if e.id == entry_id)


def test_partial_credit_and_feedback_in_words() -> None:
    e = _entry("simple", "simple_python_0")  # calculate_triangle_area(base=10, height=5)
    right = score_reply(
        "[calculate_triangle_area(base=10, height=5)]", "calls", e.gold, e.functions
    )
    assert right.value == 1.0 and right.passed
    half = score_reply("[calculate_triangle_area(base=10, height=6)]", "calls", e.gold, e.functions)
    assert half.value == pytest.approx(2 / 3) and not half.passed  # name and base right
    assert "`height` must be 5; got 6" in half.feedback
    unit = score_reply(
        "[calculate_triangle_area(base=10, height=5, unit='cm')]", "calls", e.gold, e.functions
    )
    assert "`unit` must be 'units' (or left out); got 'cm'" in unit.feedback
    assert "ignoring case, spaces" in unit.feedback
    typed = score_reply(
        "[calculate_triangle_area(base='10', height=5)]", "calls", e.gold, e.functions
    )
    assert "`base` must be an integer; got '10' (str)" in typed.feedback
    other = score_reply("[area(base=10, height=5)]", "calls", e.gold, e.functions)
    assert other.value == 0 and "missing call: expected calculate_triangle_area(" in other.feedback
    assert "not expected: area(base=10, height=5)" in other.feedback
    positional = score_reply("[calculate_triangle_area(10, 5)]", "calls", e.gold, e.functions)
    assert "missing required parameter `base`" in positional.feedback
    assert "arguments must be given as name=value" in positional.feedback


def test_parallel_calls_match_in_any_order_with_credit_per_call() -> None:
    e = _entry("parallel", "parallel_178")  # BFCL's greedy matcher refuses this right order
    calls = canonical(e)
    assert score_reply(render(calls[::-1]), "calls", e.gold, e.functions).passed
    three = score_reply(render(calls[:3]), "calls", e.gold, e.functions)
    assert three.value == pytest.approx(3 / 4) and "3 of 4 expected call(s) right" in three.feedback
    five = score_reply(render([*calls, calls[0]]), "calls", e.gold, e.functions)
    assert five.value == pytest.approx(4 / 5) and "not expected: get_stock_price(" in five.feedback


def test_a_fenced_answer_gets_half_and_is_told_why() -> None:
    e = _entry("simple", "simple_python_0")
    fenced = "```python\n[calculate_triangle_area(base=10, height=5)]\n```"
    score = score_reply(fenced, "calls", e.gold, e.functions)
    assert score.value == 0.5 and not score.passed and "inside a ``` code block" in score.feedback
    prose = score_reply("The area is 25.", "calls", e.gold, e.functions)
    assert prose.value == 0 and "not a list of function calls" in prose.feedback


def test_irrelevance_and_relevance() -> None:
    e = read_entries("irrelevance")[0]
    name = e.functions[0]["name"]
    assert score_reply("None of the functions fit.", "no_call", [], e.functions).passed
    assert score_reply("[]", "no_call", [], e.functions).passed
    called = score_reply(f"[{name}(x=1)]", "no_call", [], e.functions)
    assert called.value == 0 and "must call none" in called.feedback
    hidden = score_reply(f"```\n[{name}(x=1)]\n```\nor not", "no_call", [], e.functions)
    assert hidden.value == 0 and "still counts as a call" in hidden.feedback
    r = read_entries("live_relevance")[0]
    assert score_reply(f"[{r.functions[0]['name']}()]", "any_call", [], r.functions).passed
    assert score_reply("I cannot help.", "any_call", [], r.functions).value == 0


def test_replies_are_parsed_never_run(tmp_path: Path) -> None:
    e = _entry("simple", "simple_python_0")
    marker = tmp_path / "ran"
    reply = f"[calculate_triangle_area(base=__import__('os').system('touch {marker}'), height=5)]"
    score = score_reply(reply, "calls", e.gold, e.functions)
    assert not marker.exists() and not score.passed
    huge = score_reply("[f(x=((10**64)**64)**64)]", "calls", e.gold, e.functions)
    assert huge.value == 0 and "too large" in huge.feedback


def test_splits_are_disjoint_sized_seeded_and_stable() -> None:
    task = BfclBenchmark(category="simple", n_train=5, n_val=4, n_test=3, seed=0)
    splits = {s: task.load_split(s) for s in ("train", "val", "test")}
    assert [len(v) for v in splits.values()] == [5, 4, 3]
    ids = [i.id for items in splits.values() for i in items]
    assert len(set(ids)) == len(ids)
    # pinned: the same ids on every machine and Python (a seeded str-seeded shuffle)
    assert ids[:5] == [f"simple_python_{n}" for n in (269, 216, 144, 244, 253)]
    assert (
        BfclBenchmark(category="simple_python", n_train=5, n_val=4, n_test=3).load_split("train")
        == splits["train"]
    )
    other = BfclBenchmark(category="simple", n_train=5, n_val=4, n_test=3, seed=1)
    assert other.load_split("train") != splits["train"]
    rest = BfclBenchmark(category="live_parallel", n_train=4, n_val=4, n_test=None)
    assert len(rest.load_split("test")) == 8


TRAIN_OF_SIMPLE_AND_IRRELEVANCE = [
    "irrelevance_128",
    "simple_python_340",
    "simple_python_359",
    "simple_python_158",
    "simple_python_388",
    "irrelevance_29",
]


def test_a_list_of_categories_pools_their_items_each_scored_by_its_own_kind() -> None:
    task = load_task(
        "bfcl", {"category": ["simple", "irrelevance"], "n_train": 6, "n_val": 4, "n_test": 4}
    )
    splits = {s: task.load_split(s) for s in ("train", "val", "test")}
    ids = [i.id for items in splits.values() for i in items]
    assert len(set(ids)) == len(ids) == 14
    # pinned, as for one category: a seeded shuffle of both files together
    assert ids[:6] == TRAIN_OF_SIMPLE_AND_IRRELEVANCE
    pooled = BfclBenchmark(category=["simple", "irrelevance"], n_train=0, n_val=0, n_test=None)
    items = pooled.load_split("test")
    kinds = {i.meta["category"]: i.meta["kind"] for i in items}
    assert kinds == {"simple": "calls", "irrelevance": "no_call"}
    assert len(items) == len(read_entries("simple")) + len(read_entries("irrelevance"))
    call = next(i for i in items if i.meta["kind"] == "calls")
    assert pooled.score(render(canonical(_entry("simple", call.id))), call).passed
    abstain = next(i for i in items if i.meta["kind"] == "no_call")
    assert pooled.score("None of these functions can answer this.", abstain).passed
    assert not pooled.score("[f(x=1)]", abstain).passed
    # the same categories in another order are another shuffle; an alias is its category
    alias = BfclBenchmark(category=["simple_python", "irrelevance"], n_train=6, n_val=0, n_test=0)
    assert [i.id for i in alias.load_split("train")] == ids[:6]
    assert alias.category == ["simple", "irrelevance"]
    swapped = BfclBenchmark(category=["irrelevance", "simple"], n_train=6, n_val=0, n_test=0)
    assert [i.id for i in swapped.load_split("train")] != ids[:6]
    assert BfclBenchmark(category=["simple"], n_train=5, n_val=0, n_test=0).category == "simple"


@pytest.mark.parametrize(
    ("category", "message"),
    [
        ([], r"category must be a category name or a list of them, got \[\]"),
        (3, "category must be a category name or a list of them, got 3"),
        (["simple", 1], r"category 1 is not a name \(in \['simple', 1\]\)"),
        (["simple", "simple_python"], "category 'simple' is listed twice"),
        (["simple", "simpel"], "unknown category 'simpel'"),
    ],
)
def test_a_bad_category_list_names_the_fix(category: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_task("bfcl", {"category": category})


def test_option_errors_name_the_fix() -> None:
    with pytest.raises(ConfigError, match="unknown category 'simpel'; supported: simple, "):
        load_task("bfcl", {"category": "simpel"})
    with pytest.raises(ConfigError, match="'live_parallel' has 16 usable items"):
        BfclBenchmark(category="live_parallel", n_train=10, n_val=10, n_test=10).load_split("val")
    with pytest.raises(ConfigError, match=r"16 usable items; n_train \+ n_val = 20 is more"):
        BfclBenchmark(category="live_parallel", n_train=10, n_val=10, n_test=None).load_split("val")
    with pytest.raises(ConfigError, match=r"n_val must be an integer >= 0 \(got -1\)"):
        BfclBenchmark(n_val=-1)
    with pytest.raises(ConfigError, match=r"n_train must be an integer >= 0 \(got '5'\)"):
        load_task("bfcl", {"n_train": "5"})
    with pytest.raises(ConfigError, match="seed must be an integer"):
        load_task("bfcl", {"seed": 1.5})
    with pytest.raises(ConfigError, match="unknown split"):
        BfclBenchmark().load_split("dev")  # type: ignore[arg-type]
    assert category_of("simple_python")[0] == "simple"


def test_messages_skill_then_bfcl_prompt_then_question() -> None:
    task = BfclBenchmark(category="live_simple", n_train=0, n_val=0, n_test=None)
    item = next(i for i in task.load_split("test") if i.input["messages"][0]["role"] == "system")
    system, *turns = task.messages(item, "# Rules\nUse keyword arguments.")
    assert system.role == "system" and system.content.startswith("# Rules\nUse keyword arguments.")
    assert "you MUST put it in the format of [func_name1(" in system.content
    assert "Note that the provided function is in Python 3 syntax." in system.content
    assert system.content.endswith(item.input["messages"][0]["content"])  # BFCL appends it
    assert [t.role for t in turns] == ["user"]
    bare = task.messages(item, "")[0].content
    assert bare.startswith("You are an expert in composing functions.")
    assert "ground_truth" not in bare and repr(item.reference) not in bare


async def test_rollout_scores_the_reply() -> None:
    task = load_task("bfcl", {"category": "simple", "n_train": 1, "n_val": 1, "n_test": 1})
    item = task.load_split("val")[0]
    reply = render(canonical(_entry("simple", item.id)))
    good = await task.rollout(item, "", FunctionBackend(lambda request: reply))
    assert good.score.value == 1.0 and good.reference == item.reference
    bad = await task.rollout(item, "", FunctionBackend(lambda request: "no idea"))
    assert bad.score.value == 0 and "not a list of function calls" in bad.score.feedback


def _cache_copy(tmp_path: Path, bfcl_data: Path) -> Path:
    cache = tmp_path / "cache"
    shutil.copytree(bfcl_data, cache / "skillgrad/data/bfcl" / BUNDLE.version)
    return cache


def _eval_config(tmp_path: Path) -> Path:
    path = tmp_path / "bfcl.yaml"
    path.write_text(
        "models:\n  target: {provider: function, model: 'skillgrad.testing:user_text'}\n"
        "  optimizer: {provider: function, model: 'skillgrad.testing:user_text'}\n"
        f"env: {{task: bfcl, output_root: '{tmp_path / 'runs'}', "
        "options: {category: simple, n_train: 1, n_val: 1, n_test: 1}}\n"
    )
    (tmp_path / "skill.md").write_text("# Skill\n")
    return path


def test_missing_data_is_a_clear_error_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "empty"))
    with pytest.raises(AssetError, match=r"bfcl data is not installed.*`skillgrad data pull bfcl`"):
        BfclBenchmark().load_split("train")
    config = _eval_config(tmp_path)
    result = CliRunner().invoke(app, ["eval", str(config), "--skill", str(tmp_path / "skill.md")])
    assert result.exit_code == 2, result.output
    assert "skillgrad data pull bfcl" in result.output and "Traceback" not in result.output


def test_changed_data_is_a_clear_error_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bfcl_data: Path
) -> None:
    cache = _cache_copy(tmp_path, bfcl_data)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    assert len(BfclBenchmark().load_split("val")) == 40  # the intact copy loads
    intact = CliRunner().invoke(app, ["data", "list"])
    assert intact.exit_code == 0 and "bfcl: " not in intact.output  # no note: the copy is ok
    answers = cache / "skillgrad/data/bfcl" / BUNDLE.version / "possible_answer"
    target = answers / "BFCL_v4_simple_python.json"
    target.write_text(target.read_text().replace('"base": [10]', '"base": [11]', 1))
    with pytest.raises(
        AssetError,
        match=r"not the pinned copy.*simple_python.json changed.*"
        r"`skillgrad data pull bfcl --force`",
    ):
        BfclBenchmark().load_split("train")
    config = _eval_config(tmp_path)
    result = CliRunner().invoke(app, ["eval", str(config), "--skill", str(tmp_path / "skill.md")])
    assert result.exit_code == 2 and "pull bfcl --force" in result.output
    listed = CliRunner().invoke(app, ["data", "list"])
    assert listed.exit_code == 0 and "damaged" in listed.output
    assert "bfcl: possible_answer/BFCL_v4_simple_python.json changed (sha256" in listed.output
    assert "bfcl: restore it with: skillgrad data pull bfcl --force" in listed.output


def test_pull_force_fetches_again_and_a_failed_fetch_keeps_the_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bfcl_data: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(_cache_copy(tmp_path, bfcl_data)))
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # an index with nothing in it
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "cache"))
    runner = CliRunner()
    again = runner.invoke(app, ["data", "pull", "bfcl"])
    assert again.exit_code == 0 and "already installed and intact" in again.output
    forced = runner.invoke(app, ["data", "pull", "bfcl", "--force"])
    assert forced.exit_code == 2 and "could not fetch bfcl-eval==2026.3.23" in forced.output
    assert "Traceback" not in forced.output
    assert BUNDLE.verify() == BUNDLE.default_root()  # the intact copy is still in place


def test_a_worked_example_shows_the_functions_the_question_was_asked_with() -> None:
    task = BfclBenchmark(category=["simple", "irrelevance"], n_train=12, n_val=8, n_test=8)
    train = task.load_split("train")
    abstain = next(i for i in train if i.meta["kind"] == "no_call" and i.input["functions"])
    context = task_abilities(task).example_context
    assert context is not None
    line = context(abstain)
    names = [f["name"] for f in abstain.input["functions"]]
    assert line.startswith("Functions: ") and all(f"{n}(" in line for n in names)
    simple = read_entries("simple")[0]  # required parameters plain, optional ones marked
    doc = simple.functions[0]
    required = set(doc["parameters"].get("required", []))
    for p in doc["parameters"]["properties"]:
        assert (p if p in required else f"{p}?") in context(task._item(simple, "simple", "calls"))
    failed = Trajectory(
        item_id=abstain.id,
        skill_hash="h",
        messages=(Message("user", task.prompt(abstain)),),
        output=f"[{names[0]}(x=1)]",
        score=Score(0.0, False, "must call none"),
    )
    guard = ExampleGuard.build({"val": task.load_split("val")}, 8)
    choice = choose_example(
        [failed], {abstain.id: abstain}, task, skill="", step=1, tried=(), max_examples=3,
        max_tokens=120, count=approx_tokens, guard=guard, context=context,
    )  # fmt: skip
    assert choice.edit is not None, choice
    first, second, reply = choice.edit.content.split("\n")
    assert first.startswith("Functions: ") and f"{names[0]}(" in first
    assert second.startswith("Input: ") and reply.startswith("Reply: no function call")
