"""The optimizer's token-budgeted view of agent steps says what it cut."""

from __future__ import annotations

from skillgrad.harnesses.transcript import transcript_view
from skillgrad.skill.document import approx_tokens

STEPS = [
    {"type": "model", "text": "Loading the skill."},
    {
        "type": "tool_call",
        "tool": "Skill",
        "arguments": {"skill": "x"},
        "observation": "ok",
        "ok": True,
    },
    {
        "type": "tool_call",
        "tool": "Bash",
        "arguments": {"command": "cat big.log"},
        "observation": "line\n" * 3000,
        "ok": True,
    },
    {"type": "files", "changes": {"out.txt": {"status": "created", "content": "FROG\n"}}},
    {"type": "agent_exit", "returncode": 0, "duration_s": 1.5, "timed_out": False},
]


def test_small_transcripts_are_shown_whole() -> None:
    view = transcript_view(STEPS[:2] + STEPS[3:], max_tokens=500)
    assert "cut" not in view
    assert "[1] tool call Skill (ok)" in view and "out.txt [created]: FROG" in view


def test_long_observations_are_shortened_and_the_cut_is_stated() -> None:
    view = transcript_view(STEPS, max_tokens=400)
    assert approx_tokens(view) <= 400
    assert view.startswith("(long fields shortened: ")
    assert "chars cut]" in view and "out.txt [created]" in view


def test_many_steps_keep_the_start_and_the_end() -> None:
    steps = [{"type": "model", "text": f"turn {i} " + "word " * 50} for i in range(60)]
    view = transcript_view(steps, max_tokens=300)
    assert approx_tokens(view) <= 300
    assert "[0] model" in view and "[59] model" in view and "steps cut" in view
