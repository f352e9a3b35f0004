"""The command-forms line: the commands the target's solved episodes typed, objects as
placeholders (``train/command_forms.py``)."""

from __future__ import annotations

from skillgrad.tasks.episode import EnvReset, EnvStep
from skillgrad.train.command_forms import MAX_FORMS, command_form, forms_edit
from skillgrad.train.screens.specific import EpisodeObjects
from skillgrad.types import Score, Trajectory


def _episode(item: str, start: str, commands: list[str], passed: bool) -> Trajectory:
    steps = [EnvReset(task="Follow the book.", observation=start).to_json()]
    for n, command in enumerate(commands, 1):
        valid = not command.startswith("dance")
        steps.append(EnvStep(step=n, reply=command, action=command, valid=valid,
                             observation="Done.").to_json())  # fmt: skip
    score = Score(1.0 if passed else 0.0, passed=passed)
    return Trajectory(item_id=item, skill_hash="s", messages=(), output="", score=score,
                      steps=tuple(steps))  # fmt: skip


def test_an_object_word_becomes_one_placeholder() -> None:
    objects = EpisodeObjects(frozenset({"pineapple", "towel", "rack"}))
    assert command_form("take pineapple", objects) == "take <object>"
    assert command_form("put pineapple in towel rack", objects) == "put <object> in <object>"
    assert command_form("read instructions book", objects) == "read instructions book"
    # a number is a value of one episode; a command that is nothing but values is no form
    assert command_form("put 2 pineapple in box", objects) == "put <object> in box"
    assert command_form("[50]", objects) is None
    assert command_form("[1 2 3 4]", objects) is None


def test_the_line_lists_accepted_commands_of_solved_episodes_only() -> None:
    apple = _episode("train-1", "A book and an apple.", ["read book", "take apple"], True)
    papaya = _episode("train-2", "A book and a papaya.",
                      ["dance wildly", "read book", "take papaya"], True)  # fmt: skip
    failed = _episode("train-3", "A book and a grape.", ["look around", "eat grape"], False)
    edit = forms_edit("", [apple, papaya], [apple, papaya, failed], step=2)
    assert edit is not None and edit.op == "add" and edit.source == "commands"
    assert edit.content == (
        "- Commands that solved earlier episodes, exactly as typed (<object> stands for a word "
        "that differs from episode to episode): `read book`, `take <object>`"
    )  # the refused command and the failed episode's commands are not listed
    assert edit.trajectory_ids == ("step_0002/train-1", "step_0002/train-2")
    # a skill holding the line gets the union; nothing new, no edit
    more = _episode("train-4", "A book and a pear.", ["read book", "eat pear"], True)
    merged = forms_edit(edit.content, [more], [apple, papaya, more], step=3)
    assert merged is not None and merged.op == "replace" and merged.anchor == edit.content
    assert merged.content.endswith("`read book`, `take <object>`, `eat <object>`")
    assert forms_edit(merged.content, [apple], [apple, papaya], step=4) is None
    # no solved episode with commands: no line
    assert forms_edit("", [], [failed], step=1) is None


def test_an_instance_of_a_general_form_is_not_listed() -> None:
    # a fruit both played episodes show is no object to the screen, yet "take <object>" covers it
    one = _episode("train-1", "A book, a banana, an apple.", ["take apple", "take banana"], True)
    two = _episode("train-2", "A book, a banana, a pear.", ["take pear", "look around"], True)
    edit = forms_edit("", [one, two], [one, two], step=1)
    assert edit is not None and edit.content.endswith("`take <object>`, `look around`")


def test_the_line_is_bounded() -> None:
    many = [f"push lever{n}" for n in range(MAX_FORMS + 5)]
    one = _episode("train-1", "Levers.", many, True)
    edit = forms_edit("", [one], [one], step=1)
    assert edit is not None and edit.content.count("`") == 2 * MAX_FORMS


def test_an_episode_that_only_advanced_adds_its_forms_and_says_so() -> None:
    """``advanced`` (``train.contrast_partial``: failed attempts cut where their score peaked)
    joins the forms, and the line then says "solved or advanced"; forms of solved episodes
    alone keep the first wording, and a held "advanced" line keeps its word when merged."""
    apple = _episode("train-1", "A book and an apple.", ["read book", "take apple"], True)
    halfway = _episode("train-2", "A book and a fig.", ["read book", "eat fig"], False)
    shown = [apple, halfway]
    solved_only = forms_edit("", [apple], shown, step=1)
    assert solved_only is not None
    assert solved_only.content.startswith("- Commands that solved earlier episodes, exactly")
    both = forms_edit("", [apple], shown, step=1, advanced=[halfway])
    assert both is not None and both.op == "add"
    assert both.content.startswith("- Commands that solved or advanced earlier episodes, exactly")
    assert both.content.endswith("`read book`, `take <object>`, `eat <object>`")
    assert both.trajectory_ids == ("step_0001/train-1", "step_0001/train-2")
    assert "1 that advanced without passing" in both.rationale
    alone = forms_edit("", [], shown, step=1, advanced=[halfway])
    assert alone is not None and alone.content.endswith("`read book`, `eat <object>`")
    # advanced forms a solved episode also typed: the first wording holds
    same = forms_edit(
        "", [apple], shown, step=1, advanced=[_episode("train-3", "A pear.", ["read book"], False)]
    )
    assert same is not None and same.content == solved_only.content
    # a held "advanced" line merged with solved forms keeps "or advanced"
    more = _episode("train-4", "A book and a pear.", ["look around"], True)
    merged = forms_edit(alone.content, [more], [*shown, more], step=2)
    assert merged is not None and merged.op == "replace" and merged.anchor == alone.content
    assert merged.content.startswith("- Commands that solved or advanced earlier episodes")
    assert merged.content.endswith("`read book`, `eat <object>`, `look around`")
