"""From the optimizer's rules to edits: what the skill offers to rewrite, and where rules go.

Reflection asks for rules first (``train/schemas.py``); placement is optional. This module lists
the skill's real lines and headings (the only anchors and sections the schema offers) and turns
each rule into an ``Edit``: a new rule is an ``add`` (a Markdown list item), a rule that names a
line it replaces is a ``replace`` (or a ``delete`` when the rule is empty). A rule aimed at text
or a heading the skill does not have still leads somewhere useful: it is added as a new rule.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from skillgrad.models.structured import GRAMMAR_MAX_LENGTH
from skillgrad.prompts import prompt_head
from skillgrad.skill.document import Skill
from skillgrad.skill.match import AnchorMatch, find_anchor, format_section_path
from skillgrad.skill.package import SKILL_FILE, SkillPackage, is_package_text
from skillgrad.skill.text import sentences, words
from skillgrad.train.examples import EXAMPLES_HEADING, example_lines
from skillgrad.train.schemas import as_list_item
from skillgrad.types import Edit

MAX_CHOICES = 60
"""At most this many lines / headings are offered (a grammar-constrained decoder builds one
alternative per value; a longer skill still gets its first lines and every rule as an add)."""
MAX_ANCHOR = 300
_MARKUP = re.compile(r"^\s*(#|```|~~~|<!--|\|)")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


@dataclass(frozen=True)
class SkillChoices:
    """What the skill offers the optimizer: ``lines`` it may rewrite (list markers dropped,
    protected blocks left out) and ``headings`` it may put new rules under."""

    lines: tuple[str, ...] = ()
    headings: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.lines and not self.headings


def _documents(skill_text: str) -> list[tuple[str, str]]:
    """(file, editable text) of a single-file skill ('' = the document) or of each package file."""
    if not is_package_text(skill_text):
        return [("", skill_text)]
    pkg = SkillPackage.from_bundle(skill_text)
    docs = []
    for path, _ in pkg.files:
        found = pkg.editable(path)
        if found is not None:
            docs.append((path, found[1]))
    return docs


def skill_choices(skill_text: str) -> SkillChoices:
    """The lines and headings of ``skill_text`` the reflection schema offers."""
    lines: list[str] = []
    headings: list[str] = []
    for _, text in _documents(skill_text):
        skill = Skill(text)
        protected = "\n".join(skill.protected_blocks().values())
        shown = example_lines(text)  # demonstrations are built by code, not rewritten
        headings += [s.name for s in skill.sections() if s.path and s.title != EXAMPLES_HEADING]
        for raw in text.split("\n"):
            line = _ITEM.sub("", raw).strip()
            if not line or _MARKUP.match(raw) or len(line) > MAX_ANCHOR or line in protected:
                continue
            if raw.strip() in shown:
                continue
            lines.append(line)
    unique = lambda xs: tuple(dict.fromkeys(xs))[:MAX_CHOICES]  # noqa: E731
    return SkillChoices(unique(lines), unique(headings))


def rule_key(text: str) -> str:
    """A rule's text for comparison: no list marker, case, spacing or closing punctuation."""
    return " ".join(_ITEM.sub("", text).lower().split()).rstrip(".!;:")


def known_rules(skill_text: str, rejected: Sequence[Edit] = ()) -> set[str]:
    """``rule_key`` of every line of the skill and of every rule the gate rejected before."""
    lines = [line for _, text in _documents(skill_text) for line in text.split("\n")]
    return {rule_key(x) for x in [*lines, *(e.content for e in rejected)] if x.strip()}


_SENTENCE_END = re.compile(r"""[.!?][)"'`*]*\s*$""")


OPTIMIZER_INSTRUCTIONS = (
    "reflect_system",
    "deep_reflect_system",
    "revise_system",
    "contrast_system",
    "contrast_replies",
    "contrast_episodes",
    "reflect_repeated",
    "reflect_copied",
    "reflect_cut",
)
"""The prompts that tell the optimizer how to write a rule: a rule repeating one of their
sentences is the optimizer reciting its instructions, not learning from the failures."""
CODE_LINES = ("command_forms", "command_forms_advanced")
"""Skill lines only code writes (``train/command_forms.py``): the optimizer reads them in the
skill and in rejected candidates, and a rule repeating one is a copy (measured on Map Reader:
a reflection returned the command-forms line cut mid-word, "… `move <object>`, `look '", and
the candidate held it beside the code's own line)."""
_PARROT_MIN_WORDS = 6
_PARROT_SHARE = 0.8
_PARROT_RUN = 6


@lru_cache(maxsize=1)
def _instruction_sentences() -> tuple[tuple[str, frozenset[str], frozenset[tuple[str, ...]]], ...]:
    """Each instruction sentence, its distinct words and its runs of ``_PARROT_RUN`` words."""
    out: list[tuple[str, frozenset[str], frozenset[tuple[str, ...]]]] = []
    texts = [(resources.files("skillgrad.prompts") / f"{n}.md").read_text("utf-8")
             for n in OPTIMIZER_INSTRUCTIONS]  # fmt: skip
    for text in [*texts, *(prompt_head(n) for n in CODE_LINES)]:  # a line's fixed opening
        for block in re.split(r"\n\s*(?:-\s+|\n)", "\n" + text):  # list items, paragraphs
            for sentence in sentences(block):
                seq = words(sentence)
                found = frozenset(seq) - {"number", "what"}
                if len(found) >= _PARROT_MIN_WORDS:
                    out.append((sentence, found, frozenset(_runs(seq, _PARROT_RUN))))
    return tuple(out)


def _runs(seq: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(seq[i : i + n]) for i in range(len(seq) - n + 1)}


def instruction_copied(rule: str) -> str | None:
    """The sentence of the optimizer's own instructions (``OPTIMIZER_INSTRUCTIONS``), or of a
    line only code writes (``CODE_LINES``), that
    ``rule`` repeats: at least ``_PARROT_MIN_WORDS`` distinct words, ``_PARROT_SHARE`` of them
    in that sentence (measured on IFBench: the 1.5B proposed "Write to the model that reads the
    skill (its own system prompt) in the second person, …" and "Never quote a task's input or
    its expected answer." as rules), or ``_PARROT_RUN`` of its words in a row in that sentence
    (a paraphrase around a copied phrase; measured on HumanEval with exploration: "If the target
    fails a task, it should identify the step, action, or reply form that differs between the
    two attempts and write a rule that asks for what the …" from the contrast prompt). None
    when it repeats none."""
    seq = words(rule)  # normalised: invisible characters cannot hide a recitation
    said = set(seq)
    if len(said) < _PARROT_MIN_WORDS:
        return None
    runs = _runs(seq, _PARROT_RUN)
    for sentence, found, sentence_runs in _instruction_sentences():
        if len(said & found) >= _PARROT_SHARE * len(said) or runs & sentence_runs:
            return sentence
    return None


def is_cut(rule: str) -> bool:
    """Whether a rule ends where constrained decoding cut it: exactly ``GRAMMAR_MAX_LENGTH``
    characters (the cap every string of the reply schema gets, ``models.structured``) and no
    sentence end (measured: "... use the 'take' command to pick up the object and the 'put' or
    '" on TextWorld Commonsense)."""
    text = rule.strip()
    return len(text) >= GRAMMAR_MAX_LENGTH and not _SENTENCE_END.search(text)


def only_repeats(reply: Any, known: set[str]) -> bool:
    """True when every rule of a reflection reply adds text already known (``known_rules``)."""
    rules = list(reply.rules)
    return bool(rules) and all(
        not getattr(r, "replaces", "") and rule_key(r.rule) in known for r in rules
    )


def _file_with(skill_text: str, anchor: str) -> str | None:
    """The document (file) whose text holds ``anchor``, matched as ``Skill.apply`` would."""
    for path, text in _documents(skill_text):
        if text and isinstance(find_anchor(text, anchor, (0, len(text))), AnchorMatch):
            return "" if path == SKILL_FILE else path
    return None


def rule_edits(reply: Any, skill_text: str, ids: Sequence[str], source: str) -> list[Edit]:
    """The edits of one validated reflection reply (``schemas.reflection_model``)."""
    package = is_package_text(skill_text)
    edits: list[Edit] = []
    for proposal in reply.rules:
        if is_cut(proposal.rule):  # half a sentence never enters the skill (reflect re-asks)
            continue
        edit = _rule_edit(proposal, skill_text, package)
        if edit is not None:
            edits.append(Edit(**edit, trajectory_ids=tuple(ids), source=source))
    description = getattr(reply, "description", "").strip()
    if package and description:
        edits.append(
            Edit(
                op="description",
                section="",
                content=description,
                trajectory_ids=tuple(ids),
                source=source,
            )
        )
    return edits


_SUBJECT = r"(?:the\s+)?(?:target(?:\s+model)?|model|assistant|agent)"
_THIRD_PERSON = re.compile(
    rf"^{_SUBJECT}\s+(?:should|must|needs?\s+to|has\s+to|is\s+to|will)\s+(?:always\s+)?",
    re.IGNORECASE,
)
_ITS = re.compile(r"\b(?:its|itself)\b", re.IGNORECASE)
_YOURS = {"its": "your", "itself": "yourself"}
_CONDITION = re.compile(
    rf"^(when|if|before|after|once|whenever)\s+{_SUBJECT}\s+(is|was|does|has)\b", re.IGNORECASE
)
_BE = {"is": "you are", "was": "you were", "does": "you do", "has": "you have"}
_MAIN = re.compile(
    rf",\s*(?:they|it|{_SUBJECT})\s+(?:should|must|needs?\s+to|has\s+to|will)\s+(?:always\s+)?",
    re.IGNORECASE,
)


def _imperative(rest: str) -> str:
    """What followed "should": "its" becomes "your", "not include" becomes "do not include"."""
    rest = _ITS.sub(lambda w: _YOURS[w.group(0).lower()], rest)
    return "do " + rest if rest.lower().startswith("not ") else rest


def _conditional(rule: str) -> str | None:
    """ "When the target is asked to X, they should Y." -> "When you are asked to X, Y." (the
    condition's subject and the main clause's "they/it should" both name the model); None when
    the rule is not that shape."""
    cond, main = _CONDITION.match(rule), _MAIN.search(rule)
    if cond is None or main is None or not rule[main.end() :].strip():
        return None
    head = f"{cond.group(1)} {_BE[cond.group(2).lower()]}{rule[cond.end() : main.start()]}"
    return head[:1].upper() + head[1:] + ", " + _imperative(rule[main.end() :])


def second_person(rule: str) -> str:
    """A rule as a command to the model that reads it: the skill is its own system prompt, so
    "The target should answer ..." becomes "Answer ..." and "When the target is asked ..., it
    should answer ..." becomes "When you are asked ..., answer ..." (other text is left as
    written)."""
    m = _THIRD_PERSON.match(rule)
    if m is None or not rule[m.end() :].strip():
        return _conditional(rule) or rule
    rest = _imperative(rule[m.end() :])
    return rest[:1].upper() + rest[1:]


def _rule_edit(proposal: Any, skill_text: str, package: bool) -> dict[str, Any] | None:
    rule = second_person(proposal.rule.strip())
    replaces = _ITEM.sub("", getattr(proposal, "replaces", "")).strip()
    section = format_section_path(
        tuple(p.strip() for p in getattr(proposal, "section", "").split(">") if p.strip())
    )
    file = getattr(proposal, "file", "").strip() if package else ""
    rationale = getattr(proposal, "why", "")
    if replaces:
        where = _file_with(skill_text, replaces)
        if where is not None:
            op = "replace" if rule else "delete"
            return {
                "op": op,
                "section": "",
                "anchor": replaces,
                "content": rule,
                "file": file or where,
                "rationale": rationale,
            }
        if rule:  # the text it meant to rewrite is not in the skill: keep the rule as a new one
            rationale = (rationale + "; " if rationale else "") + (
                f"replaces {replaces[:80]!r}: not in the skill, added as a new rule"
            )
    if not rule:
        return None
    if package and not file:
        file = SKILL_FILE
    return {
        "op": "add",
        "section": section,
        "content": as_list_item(rule),
        "file": "" if file == SKILL_FILE else file,
        "rationale": rationale,
    }


__all__ = [
    "MAX_CHOICES",
    "SkillChoices",
    "is_cut",
    "known_rules",
    "only_repeats",
    "rule_edits",
    "rule_key",
    "second_person",
    "skill_choices",
]
