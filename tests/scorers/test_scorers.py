"""Every built-in scorer on fair and unfair outputs: unicode, numbers written differently, extra
whitespace, empty output, None references; plus the spec builder's errors."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest

from skillgrad.errors import ConfigError, ModelError
from skillgrad.models.structured import extract_json
from skillgrad.plugins import load_plugin
from skillgrad.scorers import SCORER_GROUP, LLMJudgeScorer, build_scorer
from skillgrad.scorers.base import Scorer
from skillgrad.scorers.judge import VERDICT_SCHEMA
from skillgrad.scorers.textnorm import find_numbers, normalize_answer
from skillgrad.testing import FunctionBackend, ScriptedBackend, request_text
from skillgrad.types import Item, Score


def run(spec: str | dict[str, Any], output: str, reference: Any, inp: Any = None) -> Score:
    score = build_scorer(spec).score(output, Item("i1", inp if inp is not None else {}, reference))
    assert 0.0 <= score.value <= 1.0
    assert score.feedback, "every score explains itself"
    return score


# -- shared guard rails -------------------------------------------------------------------------

CHEAP = ["exact", "normalized", "token_f1", "numeric", "choice", "regex", "contains", "json_fields"]


@pytest.mark.parametrize("name", CHEAP)
def test_empty_and_whitespace_output_fail_with_feedback(name: str) -> None:
    ref = {"a": 1} if name == "json_fields" else "B" if name == "choice" else "42"
    for output in ("", "   \n\t "):
        score = run(name, output, ref, {"options": ["w", "x", "y", "z"]})
        assert not score.passed and score.value == 0.0
        assert "empty output" in score.feedback


@pytest.mark.parametrize("name", CHEAP)
def test_none_reference_is_a_clear_error_not_a_crash(name: str) -> None:
    score = run(name, "42", None)
    assert not score.passed
    assert "no reference" in score.feedback and "i1" in score.feedback


# registered as entry points in skillgrad's own pyproject, like any third-party scorer
BUILTINS = ("exact", "normalized", "token_f1", "numeric", "choice", "regex", "contains",
            "json_fields", "code_tests", "llm_judge", "callable")  # fmt: skip


def test_every_builtin_is_a_scorer_protocol() -> None:
    for name in BUILTINS:
        cls = load_plugin(SCORER_GROUP, name, "scorer")
        assert cls.name == name
        if name in ("llm_judge", "callable"):
            continue
        assert isinstance(build_scorer(name), Scorer)


# -- exact / normalized / token_f1 --------------------------------------------------------------


def test_exact_trims_and_applies_nfkc_but_is_case_sensitive() -> None:
    assert run("exact", "  ＰＡＲＩＳ \n", "PARIS").passed  # full-width letters
    score = run("exact", "paris", "Paris")
    assert not score.passed and "letter case" in score.feedback
    assert run({"name": "exact", "case_sensitive": False}, "paris", "Paris").passed


def test_exact_feedback_names_the_kind_of_difference() -> None:
    assert "whitespace" in run("exact", "New  York", "New York").feedback
    assert "punctuation" in run("exact", "Paris.", "Paris").feedback
    fb = run("exact", "The answer is Paris, of course", "Paris").feedback
    assert "extra text" in fb and "'Paris'" in fb


def test_exact_accepts_any_of_a_list_reference() -> None:
    assert run("exact", "NYC", ["New York", "NYC"]).passed
    assert not run("exact", "LA", ["New York", "NYC"]).passed


def test_normalized_ignores_case_punctuation_articles_accents_and_spaces() -> None:
    assert run("normalized", "  The   CAFÉ!! ", "cafe").passed
    assert run("normalized", "«an» apple", "Apple").passed
    assert run("normalized", "ｅｌｅｐｈａｎｔ", "Elephant").passed
    assert not run({"name": "normalized", "accents": False}, "café", "cafe").passed
    score = run("normalized", "I think it is Paris", "Paris")
    assert not score.passed and "extra text" in score.feedback


def test_normalize_answer_is_squad_like() -> None:
    assert normalize_answer("The Quick, Brown  Fox.") == "quick brown fox"
    assert normalize_answer("“Zoë’s” résumé") == "zoes resume"


def test_token_f1_partial_credit_threshold_and_feedback() -> None:
    score = run("token_f1", "the big red dog", "red dog")
    assert math.isclose(score.value, 0.8) and score.passed
    assert "extra words: big" in score.feedback
    strict = run({"name": "token_f1", "pass_threshold": 0.9}, "the big red dog", "red dog")
    assert not strict.passed and math.isclose(strict.value, 0.8)
    miss = run("token_f1", "dog", "red dog")
    assert "missing words: red" in miss.feedback
    assert run("token_f1", "cat", "red dog").value == 0.0
    assert run("token_f1", "RED, dog!", ["blue cat", "red dog"]).value == 1.0
    with pytest.raises(ConfigError, match="pass_threshold"):
        build_scorer({"name": "token_f1", "pass_threshold": 2})


# -- numeric ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "reference"),
    [
        ("1,000", 1000),
        ("The total is $1,000.00.", "1000"),
        ("1e3", "1000"),
        ("It costs $3.50", 3.5),
        ("50%", "0.5"),
        ("50 %", 50),
        ("−7", -7),  # unicode minus
        ("４２", "42"),  # full-width digits
        ("so x = .5", 0.5),
        ("Answer:\n\n   42.0   ", "42"),
        ("-$3.50", "-3.5"),
        ("3/4", 0.75),
        ("half: 1/2.", "2/4"),
    ],
)
def test_numeric_understands_numbers_written_differently(output: str, reference: Any) -> None:
    assert run("numeric", output, reference).passed


def test_numeric_feedback_says_how_far_off() -> None:
    score = run("numeric", "I get 41.0", "42")
    assert not score.passed
    assert score.feedback == "expected '42', got '41.0' (numbers differ by 1)"


def test_numeric_tolerances() -> None:
    assert not run("numeric", "3.14", "3.14159").passed
    assert run({"name": "numeric", "tolerance": 0.01}, "3.14", "3.14159").passed
    assert run({"name": "numeric", "rel_tolerance": 0.01}, "101", 100).passed
    assert not run({"name": "numeric", "rel_tolerance": 0.001}, "101", 100).passed
    with pytest.raises(ConfigError, match=">= 0"):
        build_scorer({"name": "numeric", "tolerance": -1})


def test_numeric_pick_first_last_only() -> None:
    text = "First I tried 12, then 7, so the answer is 42"
    assert run("numeric", text, 42).passed
    assert run({"name": "numeric", "pick": "first"}, text, 12).passed
    only = run({"name": "numeric", "pick": "only"}, text, 42)
    assert not only.passed and "found 3" in only.feedback
    late = run("numeric", "42 is the answer (checked 2 times)", 42)
    assert not late.passed and "appears in the output" in late.feedback
    with pytest.raises(ConfigError, match="pick"):
        build_scorer({"name": "numeric", "pick": "middle"})


def test_numeric_no_number_and_bad_reference() -> None:
    score = run("numeric", "forty two", "42")
    assert not score.passed and "no number" in score.feedback
    bad = run("numeric", "42", "about forty")
    assert not bad.passed and "not a single number" in bad.feedback
    scorer = build_scorer("numeric")
    assert scorer.check_reference("1,000") is None  # type: ignore[attr-defined]
    assert "not a single number" in scorer.check_reference("n/a")  # type: ignore[attr-defined]


def test_find_numbers_does_not_invent_negatives_or_read_words() -> None:
    values = [n.value for n in find_numbers("COVID-19 pages 3-5, H2O, v2, 1,5 and -2")]
    assert values == [19, 3, 5, 1, 5, -2]
    assert [n.value for n in find_numbers("due 1/2/2024, ratio 24/8")] == [1, 3]


# -- choice -------------------------------------------------------------------------------------

OPTS = {"options": ["Paris", "Lyon", "Nice", "Paris, Texas"]}


@pytest.mark.parametrize(
    "output",
    ["A", "(A)", "a.", " Ａ ", "The answer is A.", "Answer: (A)", "I pick option A", "Paris"],
)
def test_choice_finds_the_single_label_or_option_text(output: str) -> None:
    assert run("choice", output, "A", OPTS).passed


def test_choice_reference_may_be_text_or_zero_based_index() -> None:
    assert run("choice", "B", "Lyon", OPTS).passed
    assert run("choice", "B", 1, OPTS).passed
    assert run("choice", "The answer is C", "(C)", OPTS).passed


def test_choice_ambiguous_or_missing_fails_with_feedback() -> None:
    amb = run("choice", "A or C", "A", OPTS)
    assert not amb.passed and "ambiguous" in amb.feedback and "A, C" in amb.feedback
    none = run("choice", "no idea", "A", OPTS)
    assert not none.passed and "no option label" in none.feedback
    wrong = run("choice", "B", "A", OPTS)
    assert wrong.feedback == "expected A ('Paris'), got B ('Lyon')"


def test_choice_article_a_is_not_a_label_and_longest_option_text_wins() -> None:
    assert run("choice", "A good guess is B", "B", OPTS).passed
    texas = run("choice", "It is Paris, Texas", "A", OPTS)
    assert not texas.passed and "got D" in texas.feedback


def test_choice_without_options_and_custom_labels() -> None:
    assert run("choice", "answer: c", "C", {}).passed
    five = {"options": {"A": "x", "B": "y", "C": "z", "D": "w", "E": "v"}}
    assert run({"name": "choice", "labels": "ABCDE"}, "E", "E", five).passed
    from_csv = {"options": '["Paris", "Lyon", "Nice"]'}  # a CSV cell holding a JSON list
    assert run("choice", "I'd say Nice", "C", from_csv).passed
    bad = run("choice", "A", "Rome", OPTS)
    assert not bad.passed and "not a label or option" in bad.feedback


# -- regex / contains ---------------------------------------------------------------------------


def test_regex_fullmatch_and_search() -> None:
    spec = {"name": "regex", "pattern": r"\d{4}-\d{2}-\d{2}"}
    assert run(spec, "  2024-01-31\n", None).passed  # the pattern needs no reference
    partial = run(spec, "Date: 2024-01-31", None)
    assert not partial.passed and "a part of it matches" in partial.feedback
    assert run({**spec, "mode": "search"}, "Date: 2024-01-31", None).passed
    assert run({"name": "regex", "ignore_case": True}, "YES", "yes|no").passed
    assert run("regex", "２０２４", r"\d+").passed  # NFKC before matching
    assert run("regex", "no", ["yes", "no"]).passed  # a list reference: any pattern
    assert "/yes/" in run("regex", "maybe", ["yes", "no"]).feedback


def test_regex_bad_patterns() -> None:
    with pytest.raises(ConfigError, match="invalid pattern"):
        build_scorer({"name": "regex", "pattern": "(unclosed"})
    score = run("regex", "x", "(unclosed")
    assert not score.passed and "cannot score" in score.feedback


def test_contains_all_any_partial_credit() -> None:
    out = "Use the  CAFÉ on Main Street"
    assert run("contains", out, ["cafe", "main street"]).passed
    part = run("contains", out, ["cafe", "harbor", "bank"])
    assert math.isclose(part.value, 1 / 3) and "missing: 'harbor', 'bank'" in part.feedback
    assert run({"name": "contains", "mode": "any"}, out, ["harbor", "cafe"]).passed
    spec = {"name": "contains", "phrases": ["Main"], "case_sensitive": True}
    assert run(spec, out, None).passed
    assert not run(spec, out.lower(), None).passed


# -- json_fields --------------------------------------------------------------------------------


def test_json_fields_parses_fenced_or_prose_json_with_partial_credit() -> None:
    ref = {"name": "Ada Lovelace", "born": 1815, "tags": ["math", "poetry"]}
    fenced = (
        'Sure!\n```json\n{"name": "ada lovelace", "born": "1815", "tags": ["Math", "poetry"]}\n```'
    )
    assert run("json_fields", fenced, ref).passed
    prose = 'The record is {"name": "Ada", "born": 1816} as requested.'
    score = run("json_fields", prose, ref)
    assert score.value == 0.0 and not score.passed
    assert "born: expected '1815', got '1816'" in score.feedback
    assert "tags: missing" in score.feedback
    half = run("json_fields", '{"name": "Ada Lovelace", "born": 1900}', ref)
    assert math.isclose(half.value, 1 / 3) and "name: ok" in half.feedback


def test_json_fields_selected_dotted_fields_strict_and_bad_output() -> None:
    ref = '{"user": {"city": "Paris", "zip": "75001"}, "ignored": 1}'
    spec = {"name": "json_fields", "fields": ["user.city", "user.zip"]}
    assert run(spec, '{"user": {"city": "paris", "zip": "75001"}}', ref).passed
    strict = {**spec, "strict": True}
    assert not run(strict, '{"user": {"city": "paris", "zip": "75001"}}', ref).passed
    assert "no JSON object" in run("json_fields", "no json here", {"a": 1}).feedback
    assert "not an object" in run("json_fields", "[1, 2]", {"a": 1}).feedback
    assert "not a JSON object" in run("json_fields", "{}", "plain text").feedback


def test_extract_json_takes_the_first_decodable_object_after_prose() -> None:
    assert extract_json('Note {not json} then {"a": [1, 2]} end') == {"a": [1, 2]}
    assert extract_json("```\n[1]\n```") == [1]


# -- callable ---------------------------------------------------------------------------------


def half_credit(output: str, item: Item) -> float:
    return 0.5 if output else 0.0


def test_callable_by_module_attr_and_by_function_object(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_graders.py").write_text("def third(output, item):\n    return 1 / 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = {"name": "callable", "function": "my_graders:third", "pass_threshold": 0.3}
    score = run(spec, "x", "r")
    assert math.isclose(score.value, 1 / 3) and score.passed and "third" in score.feedback
    plain = build_scorer("my_graders:third")  # a bare function by module:attr is wrapped
    assert not plain.score("x", Item("i", {}, None)).passed  # default threshold 0.5
    direct = build_scorer({"name": "callable", "function": half_credit})
    assert direct.score("", Item("i", {}, None)).value == 0.0  # the function sees empty output


def test_callable_from_a_file_with_bool_score_and_threshold(tmp_path: Path) -> None:
    (tmp_path / "grade.py").write_text(
        "from skillgrad.types import Score\n"
        "def is_upper(output, item):\n    return output.isupper()\n"
        "def graded(output, item):\n    return Score(0.7, True, 'close enough')\n"
        "def broken(output, item):\n    return 'yes'\n"
    )
    upper = build_scorer({"name": "callable", "function": "grade.py:is_upper"}, tmp_path)
    assert upper.score("ABC", Item("i", {}, None)).passed
    assert not upper.score("abc", Item("i", {}, None)).passed
    graded = build_scorer("grade.py:graded", tmp_path).score("", Item("i", {}, None))
    assert graded == Score(0.7, True, "close enough")
    with pytest.raises(TypeError, match="expected Score"):
        build_scorer("grade.py:broken", tmp_path).score("x", Item("i", {}, None))


# -- build_scorer errors ------------------------------------------------------------------------


def test_unknown_scorer_name_says_did_you_mean_and_lists_all() -> None:
    with pytest.raises(ConfigError) as err:
        build_scorer("numerik")
    msg = str(err.value)
    assert "Did you mean 'numeric'?" in msg
    for name in BUILTINS:
        assert name in msg


def test_bad_scorer_options_and_specs() -> None:
    with pytest.raises(ConfigError, match="Did you mean 'tolerance'"):
        build_scorer({"name": "numeric", "tolerence": 0.1})
    with pytest.raises(ConfigError, match="has no 'name'"):
        build_scorer({"tolerance": 0.1})
    with pytest.raises(ConfigError, match="empty"):
        build_scorer(" ")
    with pytest.raises(ConfigError, match="no attribute 'nope'"):
        build_scorer("skillgrad.scorers:nope")


def test_scorers_survive_huge_and_odd_unicode_output() -> None:
    huge = "é" * 200_000 + " 42"
    assert run("numeric", huge, 42).passed
    assert not run("exact", "\u200b\u0000", "x").passed
    assert run("normalized", "STRASSE", "Straße").passed  # casefold, not lower


# -- code_tests (through the real sandbox) ------------------------------------------------------


def test_code_tests_runs_the_fenced_code_in_the_sandbox() -> None:
    tests = "assert add(1, 2) == 3\nassert add(2, 2) == 5\n"
    output = "Here:\n```python\ndef add(a, b):\n    return a + b\n```\nDone."
    score = run("code_tests", output, tests)
    assert math.isclose(score.value, 0.5) and not score.passed
    assert "1/2 tests passed" in score.feedback and "add(2, 2) == 5" in score.feedback
    good = run("code_tests", "def add(a, b):\n    return a + b", "assert add(1, 2) == 3")
    assert good.passed and good.value == 1.0


def test_code_tests_tests_field_and_entry_point_field() -> None:
    spec = {"name": "code_tests", "tests_field": "test", "entry_point_field": "entry"}
    check = "def check(candidate):\n    assert candidate(3) == 9\n    assert candidate(0) == 0\n"
    inp = {"test": check, "entry": "square"}
    code = "def square(x):\n    return x * x\n\ndef helper(x):\n    return x\n"
    assert run(spec, code, None, inp).passed
    # without entry_point_field the sandbox tests the last function, helper, which fails
    assert not run({"name": "code_tests", "tests_field": "test"}, code, None, inp).passed
    missing = run(spec, code, None, {"entry": "square"})
    assert not missing.passed and "no 'test'" in missing.feedback


async def test_code_tests_ascore_matches_score() -> None:
    scorer = build_scorer("code_tests")
    item = Item("i", {}, "assert f() == 1")
    got = await scorer.ascore("def f():\n    return 2", item)  # type: ignore[attr-defined]
    assert got.value == 0.0 and "got 2, expected 1" in got.feedback


# -- llm_judge (with the shipped ScriptedBackend) -----------------------------------------------

RUBRIC = "Full marks if the answer names the capital of France."


def judge_item() -> Item:
    return Item("q1", {"question": "Capital of France?"}, "Paris")


async def test_llm_judge_sends_rubric_reference_schema_at_temperature_zero() -> None:
    backend = ScriptedBackend().expect(
        "Answer to grade", {"score": 0.9, "passed": True, "feedback": "names Paris"}
    )
    scorer = build_scorer({"name": "llm_judge", "rubric": RUBRIC}, backend=backend)
    assert scorer.deterministic is False  # type: ignore[attr-defined]
    score = await scorer.ascore("It is Paris.", judge_item())  # type: ignore[attr-defined]
    assert score == Score(0.9, True, "judge: names Paris")
    backend.assert_done()
    request = backend.calls[0]
    assert request.temperature == 0.0 and request.response_schema == VERDICT_SCHEMA
    text = request_text(request)
    assert RUBRIC in text and "Capital of France?" in text and "Paris" in text
    assert "It is Paris." in text


async def test_llm_judge_retries_once_on_an_invalid_verdict_then_raises() -> None:
    backend = (
        ScriptedBackend()
        .expect("Answer to grade", "I'd say 8/10")
        .expect("verdict is invalid", {"score": 0.2, "passed": False, "feedback": "vague"})
    )
    scorer = LLMJudgeScorer(RUBRIC, backend=backend)
    assert (await scorer.ascore("dunno", judge_item())).value == 0.2
    backend.assert_done()

    twice = ScriptedBackend().expect(
        "Answer to grade", {"score": 7, "passed": "maybe", "feedback": ""}, times=2
    )
    with pytest.raises(ModelError, match="failed schema validation twice") as err:
        await LLMJudgeScorer(RUBRIC, backend=twice).ascore("dunno", judge_item())
    assert "score" in str(err.value)


async def test_llm_judge_needs_a_model_and_skips_empty_output() -> None:
    scorer = LLMJudgeScorer(RUBRIC)
    assert (await scorer.ascore("  ", judge_item())).passed is False  # no call needed
    with pytest.raises(ConfigError, match="no model"):
        await scorer.ascore("Paris", judge_item())
    backend = FunctionBackend(lambda r: {"score": 1, "passed": True, "feedback": "ok"})
    scorer.bind(backend)
    assert (await scorer.ascore("Paris", judge_item())).passed
    with pytest.raises(ConfigError, match="rubric"):
        build_scorer({"name": "llm_judge", "rubric": " "})


def test_llm_judge_sync_score_outside_an_event_loop() -> None:
    backend = FunctionBackend(
        lambda r: '```json\n{"score": 0, "passed": false, "feedback": "no"}```'
    )
    score = LLMJudgeScorer(RUBRIC, backend=backend).score("Lyon", judge_item())
    assert score == Score(0.0, False, "judge: no")


@pytest.mark.parametrize("name", CHEAP)
def test_seeded_garbage_never_crashes_a_scorer(name: str) -> None:
    pool = [*'0123456789,.-+eE%$€ ()[]{}":AaBbCcDd\n\t', "−", "４", "é", "\u200b", "```", "ß"]
    refs = {"json_fields": {"a": 1, "b": "x"}, "choice": "C"}
    rng = random.Random(name)
    scorer = build_scorer(name)
    for _ in range(300):
        output = "".join(rng.choice(pool) for _ in range(rng.randint(0, 40)))
        item = Item("g", {"options": ["p", "q", "r", "s"]}, refs.get(name, "1,000"))
        score = scorer.score(output, item)
        assert 0.0 <= score.value <= 1.0 and score.feedback
