"""Semantic merge: after the lexical pass, the optimizer groups edits that say the same thing.

One optimizer call per cluster of edits with the same op and section (only clusters of two or
more). Each group merges into its first edit: support adds up, trajectory ids are united. A reply
that is not a partition of the indices is recorded as failed and the lexical result stands.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, Field

from skillgrad.models.base import ModelBackend
from skillgrad.prompts import render_prompt
from skillgrad.train.optimizer_call import ask_optimizer
from skillgrad.types import Edit


class MergeGroups(BaseModel):
    groups: list[list[int]] = Field(min_length=1, max_length=32)


def clusters(edits: Sequence[Edit]) -> dict[tuple[str, str], list[int]]:
    """Indices of edits per (op, section), in proposal order."""
    out: dict[tuple[str, str], list[int]] = {}
    for i, e in enumerate(edits):
        leaf = " ".join(e.section.lower().split(">")[-1].split())
        key = (e.op, f"{e.file}:{leaf}" if e.file else leaf)  # files of a package apart
        out.setdefault(key, []).append(i)
    return out


def is_partition(groups: list[list[int]], n: int) -> bool:
    flat = [i for g in groups for i in g]
    return sorted(flat) == list(range(n)) and all(groups)


def merge_groups(edits: Sequence[Edit], groups: list[list[int]]) -> list[Edit]:
    merged = []
    for group in groups:
        first = edits[group[0]]
        ids = tuple(dict.fromkeys(t for i in group for t in edits[i].trajectory_ids))
        support = sum(edits[i].support for i in group)
        merged.append(replace(first, support=support, trajectory_ids=ids))
    return merged


async def semantic_merge(
    edits: Sequence[Edit], optimizer: ModelBackend, *, step: int, max_tokens: int
) -> tuple[list[Edit], list[dict[str, Any]]]:
    """Edits after merging equivalent ones (order kept by first member), plus call records."""
    result: dict[int, Edit] = {i: e for i, e in enumerate(edits)}
    records: list[dict[str, Any]] = []
    for (op, section), idx in clusters(edits).items():
        if len(idx) < 2:
            continue
        members = [edits[i] for i in idx]
        listing = "\n".join(
            render_prompt("merge_edit_row", index=j, text=repr((e.content or e.anchor)[:240]))
            for j, e in enumerate(members)
        )
        reply = await ask_optimizer(
            optimizer, "merge", MergeGroups, max_tokens=max_tokens, seed=step,
            section=section, op=op, edits=listing,
        )  # fmt: skip
        record: dict[str, Any] = {"op": op, "section": section, "edits": idx, **reply.to_json()}
        if reply.parsed is None or not is_partition(reply.parsed.groups, len(idx)):
            record["kept"] = "not a partition of the indices: lexical merge result kept"
            records.append(record)
            continue
        for group, edit in zip(reply.parsed.groups, merge_groups(members, reply.parsed.groups),
                               strict=True):  # fmt: skip
            for j in group:
                result.pop(idx[j])
            result[idx[group[0]]] = edit
        records.append(record)
    return [result[i] for i in sorted(result)], records


__all__ = ["MergeGroups", "clusters", "is_partition", "merge_groups", "semantic_merge"]
