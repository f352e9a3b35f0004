"""Never a duplicate; contradictions found; revise mode when adding is exhausted (issue 26)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from fakes_e2e import RULES_ONLY
from skillgrad.config import load_config
from skillgrad.runs.io import read_json, read_jsonl
from skillgrad.runs.records import RejectedEdit, StepRecord
from skillgrad.session import run_training
from skillgrad.skill.document import Skill
from skillgrad.testing import (
    FunctionBackend,
    optimizer_call_kind,
    rules_reply,
    system_text,
    user_text,
)
from skillgrad.train.candidate import gated_before
from skillgrad.train.rules import instruction_copied, second_person
from skillgrad.train.screens.dedup import near_duplicate, screen, skill_contradictions
from skillgrad.train.select import select
from skillgrad.train.state import TrainState
from skillgrad.types import ChatRequest, Edit

sys.path.insert(0, str(Path(__file__).parents[1]))

SKILL = "# Rules\n\n- Answer with the word only.\n- Keep the reply on one line.\n"
IGNORED = "Answer with the word in capital letters."
FOLLOWED = "Answer with the word in UPPERCASE, every letter."


def _add(text: str, section: str = "Rules") -> Edit:
    return Edit(op="add", section=section, content=f"- {text}")


async def test_a_duplicate_line_is_never_applied() -> None:
    edits = [
        _add("answer with the WORD only"),  # exact once case and punctuation are ignored
        _add("Answer with only the word."),  # near: the same words reordered
        Edit(op="replace", section="", anchor="Keep the reply on one line.",
             content="Answer with the word only."),  # a copy of another line
        _add("Never add a greeting."),
    ]  # fmt: skip
    sel = await select(edits, 4, max_edit_tokens=80, skill=SKILL)
    assert [e.content for e in sel.selected] == ["- Never add a greeting."]
    assert sum("already in the skill" in d["reason"] for d in sel.dropped) == 3
    assert "- Answer with the word only." in sel.repeated
    text, _ = Skill(SKILL).apply(sel.selected)
    lines = [x for x in text.text.split("\n") if x.strip()]
    assert len(lines) == len(set(lines))


def test_two_edits_of_one_step_saying_the_same_are_one() -> None:
    out = screen([_add("Never add a greeting."), _add("never add a greeting!")], SKILL,
                 step=1, threshold=0.85)  # fmt: skip
    assert len(out.kept) == 1 and out.dropped[0]["reason"] == "repeats an edit kept this step"


def test_near_duplicate_tells_a_different_rule_apart() -> None:
    assert near_duplicate("- Answer in English.", ["- Answer with the word only."], 0.85) is None


def test_a_contradiction_inside_the_skill_is_found_and_a_new_one_held_back() -> None:
    skill = "- Always write a complete sentence.\n- Answer with the word only.\n"
    assert skill_contradictions(skill + "- Never write a complete sentence.\n") == [
        ("- Always write a complete sentence.", "- Never write a complete sentence.")
    ]
    out = screen([_add("Never write a complete sentence.")], skill, step=3, threshold=0.85)
    assert not out.kept and out.conflicts[0].reason == "contradicts a rule in the skill"
    assert out.conflicts[0].step == 3


def test_rules_speak_to_the_model_in_the_second_person() -> None:
    assert second_person("The target should answer with one word.") == "Answer with one word."
    assert second_person("Model must always reply in JSON.") == "Reply in JSON."
    assert second_person("Answer with one word.") == "Answer with one word."
    assert second_person("The target should not add words to its reply.") == (
        "Do not add words to your reply."
    )
    assert second_person("The model must never explain itself.") == "Never explain yourself."
    # a condition about the model, then "they / it should": both clauses speak to it
    assert second_person(
        "When the target is asked to pick up an object, they should respond with a command."
    ) == ("When you are asked to pick up an object, respond with a command.")
    assert second_person("If the model does not know, it must not guess its answer.") == (
        "If you do not know, do not guess your answer."
    )
    assert second_person("If the target has no tool that fits, the target should say so.") == (
        "If you have no tool that fits, say so."
    )
    # other subjects, or no "should" clause, are left as written
    assert (
        second_person("When the user asks, answer briefly.")
        == "When the user asks, answer briefly."
    )
    assert second_person("When the target is done, stop.") == "When the target is done, stop."


def _cfg(tmp_path: Path, **train: Any) -> Any:
    init = tmp_path / "init.md"
    init.write_text(f"- {IGNORED}\n")
    off = ("semantic_merge", "rank_with_optimizer", "use_slow_update", "use_meta_skill")
    base: dict[str, Any] = {"num_epochs": 1, "batch_size": 4, "patience": 5, "learning_rate": 2,
                            "min_learning_rate": 1, "init_skill": str(init)}  # fmt: skip
    base.update(dict.fromkeys(off, False), **RULES_ONLY)
    return load_config(
        data={
            "env": {"task": "toy", "output_root": str(tmp_path), "run_name": "run"},
            "train": {**base, **train},
        }
    )


def _target(request: ChatRequest) -> str:
    """Follows the capitals rule only once it names UPPERCASE (as written first, it does not)."""
    word = user_text(request).removeprefix("Word: ").strip()
    return word.upper() if "UPPERCASE" in system_text(request) else word


def _optimizer(revision: str) -> FunctionBackend:
    def reply(request: ChatRequest) -> Any:
        kind = optimizer_call_kind(request)
        if kind in ("reflect", "deep_reflect"):
            return rules_reply(IGNORED)  # the rule the skill already has, again
        if kind == "revise":
            return rules_reply(revision, replaces=IGNORED)
        raise AssertionError(f"unexpected optimizer call {kind}: {user_text(request)[:200]}")

    return FunctionBackend(reply, f"function:reviser-{len(revision)}")


def test_a_rule_reproposed_asks_revise_mode_and_the_revision_is_accepted(tmp_path: Path) -> None:
    optimizer = _optimizer(FOLLOWED)
    result = run_training(_cfg(tmp_path), optimizer=optimizer, target=FunctionBackend(_target))
    kinds = [optimizer_call_kind(r) for r in optimizer.calls]
    assert "revise" in kinds
    prompt = user_text(next(r for r in optimizer.calls if optimizer_call_kind(r) == "revise"))
    rules_part = prompt.split("## Rules in the skill the target does not follow")[1]
    assert IGNORED in rules_part.split("## ")[0]
    assert "=> Expected: '" in prompt or "Expected:" in prompt  # failing next to expected
    best = (result.run_dir / "best_skill.md").read_text()
    assert FOLLOWED in best and IGNORED not in best
    assert result.summary["val_best"] == 1.0 and result.summary["test_best"] == 1.0
    log = read_jsonl(result.run_dir / "patch_log.jsonl")
    assert [r["source"] for r in log] == ["revise"] and log[0]["edit"]["op"] == "replace"


def test_a_rule_returned_unchanged_is_revised_from_the_expected_form_once(tmp_path: Path) -> None:
    optimizer = _optimizer(IGNORED)  # a small optimizer: its own rule back, verbatim
    # the toy's answers are all distinct: the line screen refuses a form holding one of them
    # (tests/train/test_line_screens.py); here the built revision itself is under test
    cfg = _cfg(tmp_path, line_screens=False)
    result = run_training(cfg, optimizer=optimizer, target=FunctionBackend(_target))
    run = result.run_dir
    first = read_json(run / "steps/step_0001/revise.json")
    assert any("unchanged" in d["reason"] for d in first["dropped"])
    built = first["edits"][0]
    assert built["source"] == "revise_built" and built["anchor"] == f"- {IGNORED}"
    assert "Reply in exactly this form: " in built["content"]
    # rejected by the gate (the fake target needs UPPERCASE); never built again for that rule
    later = [read_json(p) for p in sorted(run.glob("steps/step_*/revise.json"))[1:]]
    assert later and all(not x["edits"] for x in later)
    assert read_json(run / "history.json")[0]["accepted"] is False


RECITED = "Write to the model that reads the skill (its own system prompt) in the second person."


def test_a_rule_reciting_the_optimizers_instructions_never_enters_the_skill(
    tmp_path: Path,
) -> None:
    # measured on IFBench: the 1.5B proposed its prompt's own lines as rules
    assert instruction_copied(RECITED) is not None
    assert instruction_copied("Never quote a task's input or its expected answer.") is not None
    assert instruction_copied(FOLLOWED) is None and instruction_copied("Reply in JSON.") is None
    # measured on HumanEval with exploration: a paraphrase around the contrast prompt's phrase
    # (12 of its 25 words in the sentence, but "rule that asks for what the" in a row)
    paraphrase = (
        "If the target fails a task, it should identify the step, action, or reply form that "
        "differs between the two attempts and write a rule that asks for what the"
    )
    assert instruction_copied(paraphrase) is not None
    assert instruction_copied("Return the function body only, with the signature as given.") is None
    # measured on Map Reader: a reflection returned the code's command-forms line, cut
    copied = (
        "- Commands that solved or advanced earlier episodes, exactly as typed (<object> "
        "stands for a word that differs from episode to episode): `move <object>`, `look '"
    )
    assert instruction_copied(copied) == (
        "Commands that solved or advanced earlier episodes, exactly as typed"
    )
    assert instruction_copied("- Commands that solved earlier episodes, exactly as typed: `a`")
    assert instruction_copied("- Use the commands that solved earlier episodes.") is None

    def reply(request: ChatRequest) -> Any:
        assert optimizer_call_kind(request) in ("reflect", "deep_reflect")
        return rules_reply(RECITED, FOLLOWED)

    result = run_training(_cfg(tmp_path), optimizer=FunctionBackend(reply),
                          target=FunctionBackend(_target))  # fmt: skip
    best = (result.run_dir / "best_skill.md").read_text()
    assert FOLLOWED in best and "second person" not in best
    warnings = [e["message"] for e in read_jsonl(result.run_dir / "events.jsonl")
                if e["event"] == "warning"]  # fmt: skip
    assert any("repeating the optimizer's own instructions" in w for w in warnings)


def test_a_revision_reciting_the_revise_prompt_is_dropped_and_built_from_the_form(
    tmp_path: Path,
) -> None:
    # measured on the quickstart: the 1.5B's revision was the revise prompt's own line
    recited = (
        "Rewrite it: more concrete, naming the exact form of the expected reply that the "
        "failed tasks show."
    )
    assert instruction_copied(recited) is not None
    result = run_training(_cfg(tmp_path, line_screens=False), optimizer=_optimizer(recited),
                          target=FunctionBackend(_target))  # fmt: skip
    first = read_json(result.run_dir / "steps/step_0001/revise.json")
    reasons = [d["reason"] for d in first["dropped"]]
    assert any("repeats the optimizer's own instructions" in r for r in reasons)
    # the revision built from the expected form, not the recital
    assert [e["source"] for e in first["edits"]] == ["revise_built"]
    for path in result.run_dir.glob("**/*skill*.md"):
        assert "naming the exact form" not in path.read_text()


def test_a_candidate_the_gate_rejected_on_this_skill_is_not_gated_again(tmp_path: Path) -> None:
    # measured on BFCL relevance: re-asked, the 1.5B proposed the rules the gate had just
    # rejected, and the next step rebuilt the same candidate
    useless = "Answer with the word spelled backwards."

    def reply(request: ChatRequest) -> Any:
        assert optimizer_call_kind(request) in ("reflect", "deep_reflect")
        return rules_reply(useless)

    cfg = _cfg(tmp_path, num_epochs=1, steps_per_epoch=3)
    result = run_training(cfg, optimizer=FunctionBackend(reply), target=FunctionBackend(_target))
    history = read_json(result.run_dir / "history.json")
    steps = [h for h in history if h["kind"] == "step"]
    assert len(steps) == 3
    assert steps[0]["n_applied"] == 1 and steps[0]["gate_evaluated"] > 0
    for later in steps[1:]:
        assert later["n_applied"] == 0 and later["gate_evaluated"] == 0
        assert "rejected before: step 1's candidate" in later["stall_reason"]
    dropped = read_json(result.run_dir / "steps/step_0002/selection.json")["dropped"]
    assert [d["edit"]["content"] for d in dropped] == [f"- {useless}"]


def test_the_same_edits_on_a_changed_skill_are_a_new_candidate() -> None:
    edit = _add("Answer with the word spelled backwards.")
    other = _add("Keep the reply short.")
    lost = RejectedEdit(step=1, edits=(edit,), incumbent=0.5, candidate=0.4)
    state = TrainState(rejected_buffer=(lost,),
                       history=(StepRecord(step=1, epoch=1, kind="step"),))  # fmt: skip
    assert gated_before(state, [edit]) is lost
    assert gated_before(state, [edit, other]) is None and gated_before(state, []) is None
    accepted = StepRecord(step=2, epoch=1, kind="step", accepted=True)
    changed = replace(state, history=(*state.history, accepted))
    assert gated_before(changed, [edit]) is None
