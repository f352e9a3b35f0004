"""Model text is made safe before it enters the skill, so a run always finishes (issue 11 §4).

Reproduced: a slow-update reply ending inside an unclosed ``` fence raised "protected block ...
is never closed" on every resume (the reply is cached); a normal edit that left a fence open was
accepted and later swallowed the protected block written after it.
"""

from __future__ import annotations

from pathlib import Path

from skillgrad.config import load_config
from skillgrad.runs.io import read_json, read_jsonl
from skillgrad.session import run_training
from skillgrad.skill.document import Skill
from skillgrad.skill.match import make_safe, open_at_end
from skillgrad.types import Edit

HERE = Path(__file__).parent
DOC = "# Rules\n- Be brief.\n\n# Output format\nOne word.\n"


def test_slow_update_guidance_with_an_open_fence_keeps_its_block_closed() -> None:
    skill, fixes = Skill(DOC).write_protected_block("slow", "Keep it short.\n```text\nEXAMPLE")
    assert skill.protected_blocks() == {"slow": "Keep it short.\n```text\nEXAMPLE\n```"}
    assert fixes == ("closed the code fence ``` opened at line 2 with '```'",)
    # the next slow update replaces the block in place: the document stays valid
    again = skill.with_protected_block("slow", "Shorter.")
    assert again.protected_blocks() == {"slow": "Shorter."}


def test_a_normal_edit_cannot_leave_a_fence_open_to_swallow_a_later_block() -> None:
    edit = Edit("add", "Output format", "Example:\n```\nHELLO")
    skill, [result] = Skill(DOC).apply([edit])
    assert result.status == "applied" and "made safe: closed the code fence" in result.reason
    assert result.edit.content == "Example:\n```\nHELLO\n```"  # the edit as applied
    assert open_at_end(skill.text) is None
    with_block = skill.with_protected_block("slow", "Guidance.")
    assert with_block.protected_blocks() == {"slow": "Guidance."}
    assert [s.name for s in with_block.sections()][-1] == "Longitudinal guidance"


def test_an_edit_that_opens_the_documents_own_fence_is_skipped() -> None:
    doc = "# Rules\n```\ncode line\n```\n\n# Output format\nOne word.\n"
    # closed on its own (made safe), but inside the document's ``` fence its ```` line closes
    # that fence, and the document's own closing line then opens one that runs to the end
    edit = Edit("insert_after", "Rules", "````\n```", anchor="code line")
    _, [result] = Skill(doc).apply([edit])
    assert result.status == "skipped"
    assert result.reason.startswith(
        "would leave the code fence ``` opened at line 7 open to the end of the document"
    )


def test_a_document_that_ends_in_an_open_fence_still_gets_a_visible_block() -> None:
    skill, fixes = Skill("# Rules\n```\ncode").write_protected_block("slow", "Guidance.")
    assert skill.protected_blocks() == {"slow": "Guidance."}
    assert fixes == ("closed the document's code fence ``` opened at line 2 before the block",)


def test_html_comment_left_open_is_closed() -> None:
    text, fixes = make_safe("Note <b>x</b>\n\n<!-- draft\n# Not a heading")
    assert text.endswith("\n-->") and fixes == (
        "closed the HTML comment opened at line 3 with '-->'",
    )


def test_a_run_with_fence_breaking_replies_finishes_and_resumes(tmp_path: Path) -> None:
    def config(epochs: int) -> object:
        return load_config(
            data={
                "env": {"task": "toy", "output_root": str(tmp_path), "run_name": "fences"},
                "train": {"num_epochs": epochs, "batch_size": 4, "slow_update_gate": False},
                "models": {
                    "optimizer": {
                        "provider": "function",
                        "model": f"{HERE / 'fakes_fences.py'}:FencedOptimizer",
                    },
                    "target": {
                        "provider": "function",
                        "model": f"{HERE / 'fakes_e2e.py'}:FakeTarget",
                    },
                },
            }
        )

    first = run_training(config(2))
    assert first.summary["status"] == "finished"
    run = first.run_dir
    best = Skill.load(run / "best_skill.md")
    state = Skill(read_json(run / "runtime_state.json")["skill"])
    guidance = state.protected_blocks()["slow_update"]  # written ungated: it is in the skill
    assert guidance.endswith("```text\nEXAMPLE OUTPUT\n```")
    assert open_at_end(state.text) is None and open_at_end(best.text) is None
    reasons = [r.get("match", "") for r in read_jsonl(run / "patch_log.jsonl")]
    assert any("made safe: closed the code fence" in r for r in reasons)
    # resume (a finished run continues with more epochs): the cached replies replay safely
    second = run_training(config(3))
    assert second.run_dir == run and second.summary["status"] == "finished"
