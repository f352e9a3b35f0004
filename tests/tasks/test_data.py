"""``DataTask``: loading split folders and ratio splits, every data problem reported with file,
line and field before any model call, option errors, and rollouts with the shipped fakes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from skillgrad.errors import ConfigError, DataError, TransientModelError
from skillgrad.registry import load_task
from skillgrad.tasks.data import DataTask
from skillgrad.testing import FunctionBackend, ScriptedBackend, system_text, user_text
from skillgrad.types import ChatRequest, Completion

DATA = Path(__file__).parent / "data"
TASK = "skillgrad.tasks.data:DataTask"


def task(**options: Any) -> DataTask:
    options.setdefault("prompt", "Q: {question}")
    built = load_task(TASK, options, DATA)
    assert isinstance(built, DataTask)
    return built


def problems_of(t: DataTask) -> str:
    with pytest.raises(DataError) as err:
        t.validate()
    return str(err.value)


# -- loading ------------------------------------------------------------------------------------


def test_split_dir_mixes_files_folders_and_formats() -> None:
    t = task(split_dir="good_splits")
    assert t.validate() == {"train": 3, "val": 2, "test": 3}
    assert t.split_manifest() == {
        "train": ["t1", "t2", "t3"],
        "val": ["v1", "v2"],
        "test": ["s1", "s2", "s3"],
    }
    train = t.load_split("train")
    assert [i.reference for i in train] == ["4", "9", 3]
    assert "answer" not in train[0].input  # the gold answer stays out of the input
    assert train[2].meta == {"file": "good_splits/train.jsonl", "line": 4}  # blank line 3
    val = t.load_split("val")
    assert val[1].input["question"] == "What is 1,000 + 1?" and val[1].reference == "1,001"
    assert t.load_split("test")[0].meta["file"] == "good_splits/test/part1.json"
    assert t.load_split("train") == train and t.load_split("train") is not t.load_split("train")


def test_ratio_split_is_seeded_disjoint_and_complete() -> None:
    first = task(file="qa.jsonl", seed=7).split_manifest()
    again = task(file="qa.jsonl", seed=7).split_manifest()
    other = task(file="qa.jsonl", seed=8).split_manifest()
    assert first == again and first != other
    assert {k: len(v) for k, v in first.items()} == {"train": 24, "val": 8, "test": 8}
    ids = [i for split in first.values() for i in split]
    assert len(ids) == len(set(ids)) == 40
    assert set(ids) == {f"qa-{n}" for n in range(1, 41)}  # no id field: file stem + line
    custom = task(file="qa.jsonl", ratios={"train": 0.5, "val": 0.25, "test": 0.25})
    assert [len(v) for v in custom.split_manifest().values()] == [20, 10, 10]


def test_prompt_template_nested_fields_and_option_lists(tmp_path: Path) -> None:
    t = task(file="qa.jsonl", prompt="[{topic.name}] {question}")
    item = t.load_split("train")[0]
    assert t.prompt(item) == f"[sums] {item.input['question']}"
    rows = [
        {"id": f"m{n}", "q": "Capital?", "options": ["Paris", "Rome"], "answer": "A"}
        for n in range(3)
    ]
    (tmp_path / "mc.json").write_text(json.dumps(rows))
    mc = load_task(
        TASK,
        {"file": "mc.json", "prompt": "{q}\n{options:letters}\n{options.1}", "scorer": "choice"},
        tmp_path,
    )
    assert isinstance(mc, DataTask)
    first = mc.load_split("train")[0]
    assert mc.prompt(first) == "Capital?\nA. Paris\nB. Rome\nRome"


def test_id_field_option(tmp_path: Path) -> None:
    rows = [{"key": {"n": n}, "question": "q", "answer": "a"} for n in range(5)]
    (tmp_path / "d.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    t = load_task(TASK, {"file": "d.jsonl", "prompt": "{question}", "id_field": "key.n"}, tmp_path)
    assert isinstance(t, DataTask)
    assert sorted(i for ids in t.split_manifest().values() for i in ids) == list("01234")
    rows[3] = {"question": "q", "answer": "a"}
    (tmp_path / "d.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    broken = load_task(
        TASK, {"file": "d.jsonl", "prompt": "{question}", "id_field": "key.n"}, tmp_path
    )
    assert isinstance(broken, DataTask)
    assert "d.jsonl line 4: id field 'key.n' is missing" in problems_of(broken)


# -- validation: every problem, with file, line and field --------------------------------------


def test_broken_rows_are_all_reported_with_file_line_and_field() -> None:
    msg = problems_of(task(split_dir="broken_rows"))
    expected = [
        "broken_rows/train.jsonl line 2: bad JSON",
        "broken_rows/train.jsonl line 3: field 'question' used by the prompt is missing",
        "broken_rows/train.jsonl line 4: reference field 'answer' is missing",
        "duplicate id 'a1': broken_rows/train.jsonl line 1 and broken_rows/train.jsonl line 5",
        "broken_rows/train.jsonl line 6: expected a JSON object, got list",
        "broken_rows/val.csv line 3: expected 3 columns (id, question, answer), got 4",
        "id 'a1' is in both 'train' (broken_rows/train.jsonl line 1) and 'val' "
        "(broken_rows/val.csv line 4)",
        "broken_rows/test.json line 3: expected a JSON object, got str",
        "broken_rows/test.json line 4: reference field 'answer' is empty",
    ]
    for line in expected:
        assert line in msg
    assert "9 problem(s); nothing was sent to a model" in msg


def test_load_split_refuses_broken_data_even_for_a_clean_split() -> None:
    t = task(split_dir="broken_rows")
    with pytest.raises(DataError, match="bad JSON"):
        t.load_split("test")
    with pytest.raises(DataError, match="bad JSON"):
        t.split_manifest()


def test_missing_and_empty_splits() -> None:
    missing = problems_of(task(split_dir="missing_split"))
    assert "missing split 'test': expected folder missing_split/test/ or a file" in missing
    assert "test.jsonl" in missing and "1 problem(s)" in missing
    empty = problems_of(task(split_dir="empty_split"))
    assert "split 'val' is empty" in empty and "1 problem(s)" in empty
    assert "split_dir nowhere is not a folder" in problems_of(task(split_dir="nowhere"))
    assert "data file nothing.jsonl does not exist" in problems_of(task(file="nothing.jsonl"))
    tiny = problems_of(
        task(file="good_splits/train.jsonl", ratios={"train": 1, "val": 1, "test": 0})
    )
    assert "split 'test' is empty: ratio 0.0 of 3 readable rows" in tiny


def test_problem_list_is_capped_with_a_count() -> None:
    msg = problems_of(task(file="many_problems.jsonl"))
    listed = [line for line in msg.splitlines() if line.startswith("  - ")]
    assert len(listed) == 20
    assert "many_problems.jsonl line 20: bad JSON" in msg
    assert "... and 11 more" in msg and "31 problem(s)" in msg


def test_bad_json_list_reports_the_line() -> None:
    msg = problems_of(task(file="bad_list.json"))
    assert "bad_list.json line 3: bad JSON: Expecting ',' delimiter" in msg
    assert "bad_list.json has no usable rows" in msg


def test_scorer_specific_reference_checks(tmp_path: Path) -> None:
    (tmp_path / "d.csv").write_text(
        "\ufeffquestion,answer\nq1,42\nq2,about ten\nq3,7\nq4,1e3\nq5,-2\n"
    )
    t = load_task(TASK, {"file": "d.csv", "prompt": "{question}", "scorer": "numeric"}, tmp_path)
    assert isinstance(t, DataTask)
    msg = problems_of(t)
    assert "d.csv line 3: field 'answer': reference 'about ten' is not a single number" in msg
    assert "1 problem(s)" in msg  # the BOM did not break the header


def test_unreadable_files(tmp_path: Path) -> None:
    (tmp_path / "latin.jsonl").write_bytes(
        '{"question": "caf\xe9", "answer": "x"}\n'.encode("latin-1")
    )
    t = load_task(TASK, {"file": "latin.jsonl", "prompt": "{question}"}, tmp_path)
    assert isinstance(t, DataTask)
    assert "latin.jsonl: not UTF-8 text" in problems_of(t)
    (tmp_path / "q.csv").write_text('question,answer\n"unclosed,1\n')
    csv_task = load_task(TASK, {"file": "q.csv", "prompt": "{question}"}, tmp_path)
    assert isinstance(csv_task, DataTask)
    assert "q.csv line 2: bad CSV" in problems_of(csv_task)


def test_template_format_errors_are_row_problems(tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").write_text('{"n": 1.5, "answer": "1"}\n{"n": "x", "answer": "1"}\n')
    t = load_task(TASK, {"file": "d.jsonl", "prompt": "{n:.1f}"}, tmp_path)
    assert isinstance(t, DataTask)
    assert "d.jsonl line 2: prompt field 'n': cannot format 'x'" in problems_of(t)


# -- option errors are ConfigErrors at construction ---------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"split_dir": "good_splits", "promt": "{q}"},
            "unknown option 'promt'. Did you mean 'prompt'?",
        ),
        ({"split_dir": "good_splits", "prompt": "{q}", "refrence_field": "a"}, "'reference_field'"),
        ({"split_dir": "x", "file": "y.jsonl", "prompt": "{q}"}, "exactly one of 'split_dir'"),
        ({"prompt": "{q}"}, "exactly one of 'split_dir'"),
        ({"split_dir": "x", "prompt": "{q}", "ratios": {"train": 1}}, "only applies with 'file'"),
        ({"file": "y.jsonl", "prompt": "{q}", "ratios": {"train": -1}}, "ratios must be >= 0"),
        ({"file": "y.jsonl", "prompt": "{q}", "ratios": {"dev": 1}}, "ratios.dev"),
        ({"file": "y.txt", "prompt": "{q}"}, "unsupported data file"),
        ({"file": "y.jsonl", "prompt": "{q} {answer}"}, "uses the reference field 'answer'"),
        ({"file": "y.jsonl", "prompt": "{q"}, "malformed"),
        ({"file": "y.jsonl", "prompt": "{} and {0}"}, "positional field"),
        ({"file": "y.jsonl", "prompt": "{q}", "scorer": "exakt"}, "Did you mean 'exact'?"),
        ({"split_dir": "x"}, "prompt: Field required"),
    ],
)
def test_bad_options(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_task(TASK, options, DATA)
    assert message in str(err.value)


# -- rollouts with the shipped fakes ------------------------------------------------------------


async def test_rollout_renders_prompt_adds_suffix_and_scores() -> None:
    t = task(split_dir="good_splits", scorer="numeric", system_suffix="Reply with a number.")
    item = t.load_split("val")[1]

    def answer(request: ChatRequest) -> str:
        assert "1,001" not in "\n".join(m.content for m in request.messages)
        return "It is 1001"

    backend = FunctionBackend(answer)
    traj = await t.rollout(item, "# Skill\nBe exact.", backend)
    request = backend.calls[0]
    assert system_text(request) == "# Skill\nBe exact.\n\nReply with a number."
    assert user_text(request) == "Q: What is 1,000 + 1?"
    assert request.max_tokens == 256 and request.temperature == 0.0
    assert traj.score.passed and traj.item_id == "v2" and traj.reference == "1,001"
    assert traj.messages[-1].content == "It is 1001" and traj.error is None

    empty_skill = await t.rollout(item, "  ", backend)
    assert empty_skill.messages[0].content == "Reply with a number."


async def test_rollout_turns_one_items_model_failure_into_data() -> None:
    t = task(split_dir="good_splits")

    def flaky(request: ChatRequest) -> Completion:
        raise TransientModelError("503 after retries")

    traj = await t.rollout(t.load_split("train")[0], "skill", FunctionBackend(flaky))
    assert traj.error is not None and "503" in traj.error and traj.score.value == 0.0


async def test_rollout_with_llm_judge_uses_the_bound_model() -> None:
    t = task(split_dir="good_splits", scorer={"name": "llm_judge", "rubric": "Is it right?"})
    item = t.load_split("train")[0]
    target = ScriptedBackend("target").expect("Q: What is 2+2?", "four")
    with pytest.raises(ConfigError, match="no model"):
        await t.rollout(item, "skill", target)
    judge = ScriptedBackend("judge").expect(
        "Answer to grade", {"score": 1.0, "passed": True, "feedback": "four is 4"}
    )
    t.bind_judge(judge)
    target.expect("Q: What is 2+2?", "four")
    traj = await t.rollout(item, "skill", target)
    assert traj.score.passed and traj.score.feedback == "judge: four is 4"
    target.assert_done()
    judge.assert_done()


async def test_rollout_records_a_scorer_crash_as_the_items_error(tmp_path: Path) -> None:
    (tmp_path / "grader.py").write_text("def grade(output, item):\n    return 1 / 0\n")
    (tmp_path / "d.jsonl").write_text('{"question": "q", "answer": "a"}\n' * 3)
    t = load_task(
        TASK, {"file": "d.jsonl", "prompt": "{question}", "scorer": "grader.py:grade"}, tmp_path
    )
    assert isinstance(t, DataTask)
    traj = await t.rollout(t.load_split("train")[0], "", FunctionBackend(lambda r: "a"))
    assert traj.error == "scorer raised ZeroDivisionError: division by zero"
    assert traj.output == "a"


def test_unknown_split_name() -> None:
    with pytest.raises(DataError, match="unknown split 'dev'"):
        task(split_dir="good_splits").load_split("dev")  # type: ignore[arg-type]
