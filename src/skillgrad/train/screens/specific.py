"""Lines that do not teach the task: a rule naming what only one train item holds, a reply
form holding one item's answer, a line addressed to the grader or the feedback, a line naming a
numbered step of an attempt the optimizer was shown, a line naming an object some shown
episodes hold and others do not.

Measured on two tasks kept apart from the project: a reading task's best skill held one train
item's fact ("The national animal of Silplen is the Veltorta."), and a letter-counting skill held
"Ask for the number of times the letter 'r' appears in the text.", "Provide the input and
expected answer in the feedback." and "... Reply in exactly this form: 1" (one item's answer).
A rule is for every item of the task; the skill is read by the target, never by the scorer.
On Pecking Order with gold off, an accepted skill held "If the target fails to take the banana
in step 3, they should take the banana in step 3.": the optimizer's episode view numbers the
steps of one attempt ("Where it went wrong: step 3"), a numbering a new episode does not share.
An environment's items are seeds, so the item-specific screen sees no episode's words: re-asked
on recorded Pecking Order pairs, 5 of 31 contrast rules named one episode's object ("Take the
apple next."), which ``EpisodeObjects`` catches.
A rule that repeats the target's own failed reply teaches that reply: on Pecking Order (gold off,
split 500) an accepted skill held "Do not repeat the same action 'I apologize for the confusion.
Please provide more details or clarify your question' 11 times in a row.", copied from the
scorer's feedback; the 0.5B given its rules typed that apology from its fourth turn on, and
solved 0 of 12 fresh val episodes (mean 0.25); the same rules without the line, 5 of 12 (0.54;
paired +0.29 [0.03, 0.55], docs/results.md). ``FailedReplies`` catches it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from skillgrad.skill.text import WORD_RE, Words, normalise, words
from skillgrad.tasks.episode import Vocabulary
from skillgrad.train.examples import example_lines
from skillgrad.train.screens.leaks import BOILERPLATE_SHARE, texts_of
from skillgrad.types import Edit, Item, Trajectory

PLACEHOLDER = "<answer>"
ITEM_SPECIFIC = "item-specific"
TO_GRADER = "addressed to the grader"
ONE_ATTEMPT = "about one attempt"
FAILED_REPLY = "repeats a failed reply"
_ATTEMPT_STEP = re.compile(
    r"\b(?:in|at|on|during|after|before|from|until|by)\s+(?:the\s+)?"
    r"(?P<step>(?:step|turn|move|action|round)\s+(?:#\s*)?\d+)\b",
    re.IGNORECASE,
)
"""A step position named as one attempt's ("in step 3", "at turn 5"); a procedure's own
numbering ("Step 3: put the coin in the box") is written as a heading, not after a preposition,
and a numbering the skill itself holds is known (``attempt_step``)."""
_QUOTED = re.compile(r"""(?:^|(?<=[\s(]))['"`‘“]([^'"`’”\n]{1,40})['"`’”]""")
_FORM_TAIL = re.compile(r":\s*(?P<value>[^:\n]{1,80}?)\s*[.!]?\s*$")
_MAX_ANSWER_WORDS = 12
_CLAUSE = re.compile(r"(?<=[.!?:;])\s+")
_GRADER = re.compile(
    r"\b(?:grader|graders|grading|scorer|scorers|evaluator|evaluators|verifier|verifiers)\b"
    r"|\b(?:in|into|to|for|from)\s+(?:the|your)\s+feedback\b"
    r"|\b(?:expected|reference|gold|correct)\s+(?:answer|output|reply|result)s?\b"
    r"(?=.*\b(?:provide|provided|include|included|give|given|supply|supplied|shown?)\b)",
    re.IGNORECASE,
)
"""Conservative: a scorer named as such, writing *into* the feedback, or the expected answer
being provided. "Read the game's feedback" (a rule about the task) does not match."""


@dataclass(frozen=True)
class ItemWords:
    """The run's train and val items as words: which items hold each word (``owners``) and the
    train answers that are one item's value (``answers``; empty when the references are a
    small label set, such as positive/negative, which any rule may name)."""

    owners: Mapping[str, frozenset[str]]
    train: frozenset[str]
    answers: frozenset[tuple[str, ...]]

    @classmethod
    def build(cls, items: Mapping[str, Sequence[Item]]) -> ItemWords:
        owners: dict[str, set[str]] = {}
        for split in ("train", "val"):
            for item in items.get(split, []):
                for text in [*texts_of(item.input), *texts_of(item.reference)]:
                    for w in words(text):
                        owners.setdefault(w, set()).add(item.id)
        train = list(items.get("train", []))
        refs = [tuple(words(" ".join(texts_of(i.reference)))) for i in train]
        refs = [r for r in refs if 0 < len(r) <= _MAX_ANSWER_WORDS]
        labels = len(set(refs)) <= max(2, BOILERPLATE_SHARE * len(train))
        return cls(
            owners={w: frozenset(ids) for w, ids in owners.items()},
            train=frozenset(i.id for i in train),
            answers=frozenset() if labels else frozenset(refs),
        )

    def only_item(self, word: str) -> str | None:
        """The train item that alone holds ``word`` among the train and val items, else None."""
        ids = self.owners.get(word, frozenset())
        if len(ids) != 1:
            return None
        (only,) = ids
        return only if only in self.train else None


def _capitalised(text: str) -> set[str]:
    """Normalised words written with a capital letter (not as the first word of a sentence or
    of a clause after ':' or ';': "reply: None of the functions applies") or holding a digit."""
    out: set[str] = set()
    for clause in _CLAUSE.split(" ".join(text.split())):
        for m in list(WORD_RE.finditer(clause))[1:]:
            if m.group()[:1].isupper() or any(c.isdigit() for c in m.group()):
                out |= set(words(m.group()))
    return out


def addressed_to_grader(line: str) -> str | None:
    """The phrase of ``line`` that speaks to the grader or the feedback, else None."""
    m = _GRADER.search(line)
    return m.group(0) if m else None


def attempt_step(line: str, known_text: str) -> str | None:
    """The step position of one shown attempt that ``line`` names ("in step 3"), unless the
    skill in force (``known_text``) numbers its own steps the same way, else None."""
    for m in _ATTEMPT_STEP.finditer(line):
        said = " ".join(m.group("step").lower().replace("#", " ").split())
        if said not in " ".join(known_text.lower().replace("#", " ").split()):
            return m.group(0)
    return None


def _distinctive(line: str) -> list[str]:
    """Words of ``line`` that could name one item: quoted, holding a digit, or capitalised
    mid-sentence (a name)."""
    found = [w for q in _QUOTED.findall(line) for w in words(q)]
    return list(dict.fromkeys([*found, *sorted(_capitalised(line))]))


def item_specific(line: str, index: ItemWords, known: frozenset[str]) -> str | None:
    """Why ``line`` names what only one train item holds (a quoted letter, a number, a name in
    no other item, not in ``known``: the skill's and the task's own words), else None."""
    for w in _distinctive(line):
        if w in known:
            continue
        if (only := index.only_item(w)) is not None:
            return f"{ITEM_SPECIFIC}: names {w!r}, which only train item {only} holds"
    return None


def placeholder_form(line: str, index: ItemWords) -> str | None:
    """``line`` with a reply form that is one train item's answer (after a closing ':' or
    quoted) shown as ``PLACEHOLDER``; None when it holds no such form."""
    if not index.answers:
        return None
    m = _FORM_TAIL.search(line)
    if m is not None and tuple(words(m.group("value"))) in index.answers:
        return line[: m.start("value")] + PLACEHOLDER + line[m.end("value") :]
    for q in _QUOTED.finditer(line):
        if tuple(words(q.group(1))) in index.answers:
            return line[: q.start(1)] + PLACEHOLDER + line[q.end(1) :]
    return None


@dataclass(frozen=True)
class EpisodeObjects:
    """Words that name one episode's objects: acted on by a command the environment accepted in
    a shown episode, seen in that episode and missing from another played episode's task and
    observations (``apple`` in Pecking Order, ``north`` or ``garage`` in Map Reader). A word
    every episode shows (``book``, ``map``, ``coin``) is the task's. Built from the step's
    trajectories through their kind's view (``TrajectoryView.vocabulary``); empty without two
    episodes."""

    words: frozenset[str] = frozenset()

    @classmethod
    def build(cls, vocabularies: Sequence[Vocabulary | None]) -> EpisodeObjects:
        shown = [v for v in vocabularies if v is not None]
        if len(shown) < 2:
            return cls()
        common = frozenset.intersection(*(v.seen for v in shown))
        return cls(frozenset(w for v in shown for w in v.acted & v.seen) - common)

    def named(self, line: str, known: frozenset[str]) -> str | None:
        """The first word of ``line`` naming one episode's object, not in ``known``."""
        return next((w for w in words(line) if w in self.words and w not in known), None)


@dataclass(frozen=True)
class FailedReplies:
    """The target's replies in shown attempts that failed, as runs of words a rule must not
    repeat: every ``REPLY_WINDOW`` consecutive words of one, except a run that the text the
    target was given (a task, an observation, an input), a command the environment accepted or
    the skill's own rules also hold. A shorter failed reply is not one: "Read the instructions
    book", refused by the game as a command, is also the procedure in words (measured: the
    screen refused that rule on Pecking Order split 501 while it held short replies)."""

    runs: frozenset[Words] = frozenset()
    given: str = " "

    @classmethod
    def build(
        cls, shown: Sequence[Trajectory], vocabularies: Sequence[Vocabulary | None]
    ) -> FailedReplies:
        runs: set[Words] = set()
        given: list[str] = []
        for t, vocabulary in zip(shown, vocabularies, strict=True):
            given += vocabulary.commands if vocabulary else ()
            for m in t.messages:
                if m.role != "assistant":
                    given.append(m.content)
                elif not t.score.passed:
                    runs |= _runs(words(m.content)[:_MAX_REPLY_WORDS])
        said = " ".join(" ".join(words(x)) for x in given)
        return cls(frozenset(runs), f" {said} ")

    def repeated(self, line: str, known_text: str) -> str | None:
        """The first run of ``line`` that repeats a failed reply, else None."""
        if not self.runs:
            return None
        known = f" {' '.join(words(known_text))} "
        said = words(line)
        for size in sorted({len(r) for r in self.runs}, reverse=True):
            for i in range(len(said) - size + 1):
                run = said[i : i + size]
                shown = f" {' '.join(run)} "
                if run in self.runs and shown not in self.given and shown not in known:
                    return " ".join(run)
        return None


REPLY_WINDOW = 6
"""Words in a run of a failed reply that a rule may not repeat: shorter runs ("take the apple",
"read the instructions book") are how a rule names the task's own actions."""
_MAX_REPLY_WORDS = 2000


def _runs(said: Words) -> set[Words]:
    return {said[i : i + REPLY_WINDOW] for i in range(len(said) - REPLY_WINDOW + 1)}


@dataclass
class LineScreen:
    """Rules after the screen: ``kept`` (rewritten ones included), ``dropped`` (edit, reason)
    and ``rewritten`` (edit as kept, the line it was)."""

    kept: list[Edit]
    dropped: list[dict[str, Any]]
    rewritten: list[dict[str, Any]]


def known_rules(*skills: str) -> str:
    """The text of ``skills`` without their worked examples' lines: the words a rule may name
    although one item holds them (an example shows one item's objects and names)."""
    shown = {x for skill in skills for x in example_lines(skill)}
    return "\n".join(x for skill in skills for x in skill.splitlines() if x.strip() not in shown)


def screen_lines(
    edits: Sequence[Edit],
    index: ItemWords,
    known_text: str,
    *,
    rewrite: bool = True,
    objects: EpisodeObjects = EpisodeObjects(),
    failed: FailedReplies = FailedReplies(),
) -> LineScreen:
    """Refuse each rule with a line addressed to the grader, naming a numbered step of one
    shown attempt, naming one episode's object (``objects``), repeating a failed reply
    (``failed``), or naming what one train item holds; show a reply form holding one item's
    answer as ``PLACEHOLDER`` (``rewrite``) or refuse it. ``known_text``: the rules of the skill
    in force and of the initial skill (their words are not one item's; a worked example's are:
    ``known_rules``). Worked examples (built by code from their item on purpose) pass."""
    known = frozenset(normalise(w) for w in WORD_RE.findall(normalise(known_text)))
    out = LineScreen([], [], [])
    for edit in edits:
        if edit.source == "example" or edit.op not in ("add", "replace", "insert_after"):
            out.kept.append(edit)
            continue
        why, lines = "", edit.content.split("\n")
        for i, line in enumerate(lines):
            if said := addressed_to_grader(line):
                why = f"{TO_GRADER}: {said!r} (a rule speaks to the model doing the task)"
            elif step := attempt_step(line, known_text):
                why = (f"{ONE_ATTEMPT}: {step!r} numbers a step of an episode the optimizer was "
                       "shown; a new episode's steps differ")  # fmt: skip
            elif (obj := objects.named(line, known)) is not None:
                why = (f"{ONE_ATTEMPT}: names {obj!r}, an object some shown episodes hold and "
                       "others do not; name it by its role in the task")  # fmt: skip
            elif (run := failed.repeated(line, known_text)) is not None:
                why = (f"{FAILED_REPLY}: {run!r} are words of a reply the target got wrong; "
                       "a target that reads them types them: name the mistake, not its "
                       "words")  # fmt: skip
            elif (shown := placeholder_form(line, index)) is not None:
                if not rewrite:
                    why = f"{ITEM_SPECIFIC}: the reply form is one train item's answer"
                lines[i] = shown
            elif found := item_specific(line, index, known):
                why = found
            if why:
                break
        if why:
            out.dropped.append({"edit": edit, "reason": why})
        elif "\n".join(lines) != edit.content:
            note = f"reply form shown as {PLACEHOLDER} (it was one train item's answer)"
            kept = replace(
                edit,
                content="\n".join(lines),
                rationale=(edit.rationale + "; " if edit.rationale else "") + note,
            )
            out.kept.append(kept)
            out.rewritten.append({"edit": kept, "was": edit.content})
        else:
            out.kept.append(edit)
    return out


__all__ = [
    "FAILED_REPLY",
    "ITEM_SPECIFIC",
    "ONE_ATTEMPT",
    "PLACEHOLDER",
    "TO_GRADER",
    "EpisodeObjects",
    "FailedReplies",
    "ItemWords",
    "LineScreen",
    "addressed_to_grader",
    "attempt_step",
    "item_specific",
    "known_rules",
    "placeholder_form",
    "screen_lines",
]
