"""Pydantic schemas of everything the optimizer model returns (validated, never trusted)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Out(BaseModel):
    model_config = ConfigDict(extra="ignore")


class EditProposal(_Out):
    op: Literal["add", "replace", "delete", "insert_after"]
    section: str = Field("", max_length=120)
    anchor: str = Field("", max_length=400)
    content: str = Field("", max_length=1200)
    rationale: str = Field("", max_length=300)


class PackageEditProposal(EditProposal):
    """An edit to a skill package: which file, and the frontmatter description as an op."""

    op: Literal["add", "replace", "delete", "insert_after", "description"] = Field(  # type: ignore[assignment]
        description="description: replace the package's frontmatter description with content"
    )
    file: str = Field(
        "",
        max_length=200,
        description="package file to edit, e.g. references/forms.md ('' = SKILL.md); "
        "an add to a new path creates that file",
    )


class FailurePattern(_Out):
    pattern: str = Field(max_length=160)
    item_ids: list[str] = Field(default_factory=list, max_length=12)


def reflection_model(max_edits: int, package: bool = False) -> type[BaseModel]:
    """The reflection schema with the edit count capped at ``max_edits`` (L); for a skill
    package each edit also names its ``file`` and may rewrite the ``description``."""

    if package:

        class PackageReflectionOutput(_Out):
            edits: list[PackageEditProposal] = Field(min_length=1, max_length=max_edits)
            failure_patterns: list[FailurePattern] = Field(default_factory=list, max_length=3)

        return PackageReflectionOutput

    class ReflectionOutput(_Out):
        # edits first: a small model spends its token budget on what matters
        edits: list[EditProposal] = Field(min_length=1, max_length=max_edits)
        failure_patterns: list[FailurePattern] = Field(default_factory=list, max_length=3)

    return ReflectionOutput


class RankingOutput(_Out):
    order: list[int] = Field(max_length=64)


class SlowUpdateOutput(_Out):
    guidance: str = Field(min_length=1, max_length=900)


class MetaSkillOutput(_Out):
    memo: str = Field(min_length=1, max_length=1200)


__all__ = [
    "EditProposal",
    "FailurePattern",
    "MetaSkillOutput",
    "PackageEditProposal",
    "RankingOutput",
    "SlowUpdateOutput",
    "reflection_model",
]
