"""Reflect (the backward pass): the optimizer reads scored trajectories and proposes edits.

Shallow mode: failed trajectories (and successes unless ``failure_only``) are cut into
minibatches, one optimizer call each, ``analyst_workers`` in parallel. Deep mode: when one
failure pattern covers more than ``deep_reflect_threshold`` of the step's failures, one extra
call cross-references every trajectory of that pattern and proposes systemic edits.
"""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from skillgrad.models.base import ModelBackend
from skillgrad.models.structured import StructuredReply
from skillgrad.prompts import render_prompt
from skillgrad.skill_package import is_package_text
from skillgrad.train.optimizer_call import ask_optimizer
from skillgrad.train.progress import NullProgress, Progress
from skillgrad.train.schemas import reflection_model
from skillgrad.transcript import transcript_view
from skillgrad.types import Edit, RejectedEdit, Trajectory


@dataclass(frozen=True)
class ReflectConfig:
    minibatch_size: int
    max_edits: int
    failure_only: bool
    deep_threshold: float
    workers: int
    max_tokens: int
    temperature: float = 0.0


@dataclass
class ReflectResult:
    edits: list[Edit] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)

    @property
    def calls(self) -> int:
        return len(self.records)

    @property
    def failed_calls(self) -> int:
        return sum(1 for r in self.records if not r["ok"])


def trajectory_id(step: int, item_id: str) -> str:
    return f"step_{step:04d}/{item_id}"


def render_trajectories(trajs: Sequence[Trajectory], limit: int = 500) -> str:
    """The optimizer's view of trajectories (``prompts/trajectory.md``): input and gold side by
    side (what the skill must map one to the other), output, score, feedback, error."""
    blocks = []
    for t in trajs:
        user = next((m.content for m in reversed(t.messages) if m.role == "user"), "")
        block = render_prompt(
            "trajectory",
            item_id=t.item_id,
            score=f"{t.score.value:.2f}",
            status="PASS" if t.score.passed else "FAIL",
            input=user[:limit],
            expected=str(t.reference)[:limit],
            output=repr(t.output[:limit]),
            feedback=t.score.feedback[:limit],
        )
        if t.error:
            block += "\n" + render_prompt("trajectory_error", error=t.error[:limit])
        if any(s.get("type") == "agent_exit" for s in t.steps):  # an agent harness rollout
            view = transcript_view(t.steps, max_tokens=limit * 2)
            block += "\n" + render_prompt("trajectory_transcript", transcript=view)
        blocks.append(block)
    return "\n\n".join(blocks) if blocks else "(none)"


def render_rejected(buffer: Sequence[RejectedEdit]) -> str:
    if not buffer:
        return "(none)"
    rows = []
    for entry in buffer:
        drop = entry.incumbent - entry.candidate
        for e in entry.edits:
            what = e.content or e.anchor or ""
            if entry.refused:  # refused before the gate (e.g. it copied data): no scores
                rows.append(
                    render_prompt(
                        "refused_edit_row",
                        step=entry.step,
                        op=e.op,
                        section=e.section,
                        what=repr(what[:160]),
                        reason=entry.refused,
                    )
                )
                continue
            row = render_prompt(
                "rejected_edit_row",
                step=entry.step,
                op=e.op,
                section=e.section,
                what=repr(what[:160]),
                candidate=f"{entry.candidate:.3f}",
                incumbent=f"{entry.incumbent:.3f}",
                drop=f"{drop:+.3f}",
            )
            rows.append(row)
    return "\n".join(rows)


def _edits_from(reply: StructuredReply[Any], ids: Sequence[str], source: str) -> list[Edit]:
    if reply.parsed is None:
        return []
    return [
        Edit(
            op=p.op,
            section=p.section,
            content=p.content,
            anchor=p.anchor,
            rationale=p.rationale,
            trajectory_ids=tuple(ids),
            source=source,
            file=getattr(p, "file", ""),
        )
        for p in reply.parsed.edits
    ]


async def reflect(
    step: int,
    skill: str,
    trajectories: Sequence[Trajectory],
    optimizer: ModelBackend,
    cfg: ReflectConfig,
    *,
    meta_memo: str = "",
    rejected: Sequence[RejectedEdit] = (),
    progress: Progress | None = None,
) -> ReflectResult:
    progress = progress or NullProgress()
    # an infrastructure failure (agent crashed, endpoint down) says nothing about the skill
    trajectories = [t for t in trajectories if t.infra_error is None]
    failures = [t for t in trajectories if not t.score.passed]
    chosen = failures if cfg.failure_only else list(trajectories)
    batches = [
        chosen[i : i + cfg.minibatch_size] for i in range(0, len(chosen), cfg.minibatch_size)
    ]
    schema = reflection_model(cfg.max_edits, package=is_package_text(skill))
    common = {
        "skill": skill or "(empty document)",
        "meta": meta_memo or "(none yet)",
        "rejected": render_rejected(rejected),
        "step": step,
        "max_edits": cfg.max_edits,
    }
    limit = asyncio.Semaphore(cfg.workers)
    progress.start("reflect", len(batches))

    async def shallow(batch: list[Trajectory]) -> StructuredReply[Any]:
        async with limit:
            reply = await ask_optimizer(
                optimizer,
                "reflect",
                schema,
                max_tokens=cfg.max_tokens,
                temperature=cfg.temperature,
                seed=step,
                **common,
                n_items=len(batch),
                trajectories=render_trajectories(batch),
            )
        progress.advance("reflect", info="ok" if reply.error is None else "invalid")
        return reply

    try:
        replies = await asyncio.gather(*(shallow(b) for b in batches))
    finally:
        progress.finish("reflect")
    result = ReflectResult()
    for batch, reply in zip(batches, replies, strict=True):
        ids = [trajectory_id(step, t.item_id) for t in batch]
        result.edits.extend(_edits_from(reply, ids, "reflect"))
        result.records.append({"mode": "shallow", "items": ids, **reply.to_json()})
    if len(batches) > 1:
        await _deep(step, failures, replies, optimizer, cfg, common, result)
    return result


def dominant_pattern(
    replies: Sequence[StructuredReply[Any]], failure_ids: set[str]
) -> tuple[str, set[str]] | None:
    """The failure pattern (merged across minibatches by text similarity) covering most failures."""
    clusters: list[tuple[str, set[str]]] = []
    for reply in replies:
        for p in reply.parsed.failure_patterns if reply.parsed is not None else []:
            ids = set(p.item_ids) & failure_ids
            key = " ".join(p.pattern.lower().split())
            for i, (name, members) in enumerate(clusters):
                if difflib.SequenceMatcher(None, name, key).ratio() >= 0.6:
                    clusters[i] = (name, members | ids)
                    break
            else:
                clusters.append((key, ids))
    if not clusters:
        return None
    return max(clusters, key=lambda c: (len(c[1]), c[0]))


async def _deep(
    step: int,
    failures: list[Trajectory],
    replies: Sequence[StructuredReply[Any]],
    optimizer: ModelBackend,
    cfg: ReflectConfig,
    common: dict[str, Any],
    result: ReflectResult,
) -> None:
    found = dominant_pattern(replies, {t.item_id for t in failures})
    if found is None or not failures:
        return
    pattern, ids = found
    share = len(ids) / len(failures)
    if share <= cfg.deep_threshold or len(ids) < 2:
        return
    group = [t for t in failures if t.item_id in ids][:12]
    reply = await ask_optimizer(
        optimizer,
        "deep_reflect",
        reflection_model(cfg.max_edits, package=is_package_text(common["skill"])),
        max_tokens=cfg.max_tokens,
        temperature=cfg.temperature,
        seed=step,
        **common,
        pattern=pattern,
        share=f"{share:.0%}",
        trajectories=render_trajectories(group, limit=300),
    )
    tids = [trajectory_id(step, t.item_id) for t in group]
    result.edits.extend(_edits_from(reply, tids, "deep_reflect"))
    result.records.append({"mode": "deep", "pattern": pattern, "items": tids, **reply.to_json()})


__all__ = ["ReflectConfig", "ReflectResult", "reflect", "render_trajectories", "trajectory_id"]
