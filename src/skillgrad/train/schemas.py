"""Pydantic schemas of everything the optimizer model returns (validated, never trusted)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model


class _Out(BaseModel):
    model_config = ConfigDict(extra="ignore")


class RuleProposal(_Out):
    """One rule for the target, written first; where it goes is optional and comes after."""

    rule: str = Field(
        max_length=1200,
        description="the rule: a short imperative sentence to the model that reads it "
        "('' together with replaces = delete that text)",
    )
    replaces: str = Field(
        "",
        max_length=400,
        description="exact text of the current skill this rule rewrites ('' = a new rule)",
    )
    section: str = Field(
        "",
        max_length=120,
        description="heading of the current skill to put a new rule under ('' = the end)",
    )


class PackageRuleProposal(RuleProposal):
    file: str = Field(
        "",
        max_length=200,
        description="package file the rule belongs to ('' = SKILL.md); a new path creates it",
    )


_LIST_OR_BLOCK = re.compile(r"^\s*([-*+] |\d+[.)] |#|```|>|\|)")


def as_list_item(rule: str) -> str:
    """A one-line rule as a Markdown list item; anything already structured stays as it is."""
    text = rule.strip()
    if "\n" in text or _LIST_OR_BLOCK.match(text):
        return text
    return f"- {text}"


def _field_enum(choices: Sequence[str]) -> dict[str, Any]:
    return {"enum": ["", *dict.fromkeys(c for c in choices if c)]}


def reflection_model(
    max_edits: int,
    *,
    lines: Sequence[str] = (),
    headings: Sequence[str] = (),
    package: bool = False,
) -> type[BaseModel]:
    """The reflection schema: ``{"rules": [{"rule", "replaces"?, "section"?}], ...}`` with at
    most ``max_edits`` (L) rules. The skill's real ``lines`` and ``headings`` become the only
    values ``replaces`` and ``section`` may take in the schema sent to the model (a grammar-
    constrained model cannot name text the skill does not have); the fields are left out when
    the skill has none. Validation stays lenient: an unknown anchor becomes a new rule
    (``train/rules.py``). A package adds ``file`` per rule and an optional ``description``."""
    base = PackageRuleProposal if package else RuleProposal
    fields: dict[str, Any] = {"rule": (str, base.model_fields["rule"])}
    for name, choices in (("replaces", lines), ("section", headings)):
        if choices:
            info = base.model_fields[name]
            fields[name] = (
                str,
                Field(
                    "",
                    max_length=info.metadata[0].max_length,
                    description=info.description,
                    json_schema_extra=_field_enum(choices),
                ),
            )
    if package:
        fields["file"] = (str, base.model_fields["file"])
    proposal = create_model("Rule", __base__=_Out, **fields)
    top: dict[str, Any] = {
        "rules": (list[proposal], Field(min_length=1, max_length=max_edits)),
    }
    if package:
        top["description"] = (
            str,
            Field("", max_length=1024, description="new frontmatter description ('' = keep)"),
        )
    return create_model("Reflection", __base__=_Out, **top)


class RankingOutput(_Out):
    order: list[int] = Field(max_length=64)


class SlowUpdateOutput(_Out):
    """Longitudinal guidance as rules (rule first, like reflection); rendered as a list."""

    rules: list[str] = Field(min_length=1, max_length=4)

    @property
    def guidance(self) -> str:
        return "\n".join(as_list_item(r) for r in self.rules if r.strip())


class MetaSkillOutput(_Out):
    memo: str = Field(min_length=1, max_length=1200)


__all__ = [
    "MetaSkillOutput",
    "PackageRuleProposal",
    "RankingOutput",
    "RuleProposal",
    "SlowUpdateOutput",
    "as_list_item",
    "reflection_model",
]
