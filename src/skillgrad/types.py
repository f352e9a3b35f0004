"""Plain, frozen, JSON-serialisable values passed between the training phases.

Every phase of the loop (rollout, reflect, aggregate, select, update, gate) takes and returns
these values; nothing on disk is pickled. ``to_json``/``from_json`` round-trip each of them.
The records a run keeps (step records, gate results, leaks...) are ``runs/records.py``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

EditOp = Literal["add", "replace", "delete", "insert_after", "description"]
Role = Literal["system", "user", "assistant", "tool"]


def _clean(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _clean(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    return value


def to_json(value: Any) -> Any:
    """Turn a dataclass (or nested containers of them) into JSON-ready builtins."""
    return _clean(value)


@dataclass(frozen=True)
class Message:
    role: Role
    content: str
    name: str | None = None
    tool_calls: tuple[dict[str, Any], ...] = ()
    tool_call_id: str | None = None

    def to_openai(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.name:
            out["name"] = self.name
        if self.tool_calls:
            out["tool_calls"] = [dict(t) for t in self.tool_calls]
        if self.tool_call_id:
            out["tool_call_id"] = self.tool_call_id
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Message:
        return cls(
            role=d["role"],
            content=d.get("content") or "",
            name=d.get("name"),
            tool_calls=tuple(d.get("tool_calls") or ()),
            tool_call_id=d.get("tool_call_id"),
        )


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )


@dataclass(frozen=True)
class ChatRequest:
    """One chat call. ``response_schema`` asks for JSON matching a JSON schema."""

    messages: tuple[Message, ...]
    temperature: float = 0.0
    max_tokens: int = 512
    seed: int | None = 0
    response_schema: dict[str, Any] | None = None
    tools: tuple[dict[str, Any], ...] = ()
    stop: tuple[str, ...] = ()

    def cache_payload(self) -> dict[str, Any]:
        return to_json(self)


@dataclass(frozen=True)
class Completion:
    text: str
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    finish_reason: str = "stop"
    tool_calls: tuple[dict[str, Any], ...] = ()
    cached: bool = False

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Completion:
        return cls(
            text=d.get("text", ""),
            usage=Usage(**d.get("usage", {})),
            model=d.get("model", ""),
            finish_reason=d.get("finish_reason", "stop"),
            tool_calls=tuple(d.get("tool_calls") or ()),
            cached=bool(d.get("cached", False)),
        )


@dataclass(frozen=True)
class Item:
    """One task instance. ``reference`` is the gold answer: scorer and optimizer see it, the target
    never does."""

    id: str
    input: Any
    reference: Any = None
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Score:
    value: float
    passed: bool
    feedback: str = ""


@dataclass(frozen=True)
class Trajectory:
    item_id: str
    skill_hash: str
    messages: tuple[Message, ...]
    output: str
    score: Score
    reference: Any = None
    error: str | None = None
    usage: Usage = field(default_factory=Usage)
    steps: tuple[dict[str, Any], ...] = ()
    # The rollout says nothing about the skill (agent program crashed or timed out, its model
    # endpoint was unreachable): missing data for the gate, not a zero. ``error`` is set too.
    infra_error: str | None = None

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Trajectory:
        return cls(
            item_id=d["item_id"],
            skill_hash=d["skill_hash"],
            messages=tuple(Message.from_json(m) for m in d.get("messages", [])),
            output=d.get("output", ""),
            score=Score(**d["score"]),
            reference=d.get("reference"),
            error=d.get("error"),
            usage=Usage(**d.get("usage", {})),
            steps=tuple(d.get("steps") or ()),
            infra_error=d.get("infra_error"),
        )


@dataclass(frozen=True)
class Edit:
    """A gradient: one structured change to the skill document.

    ``section`` is a heading path such as ``"Output format"`` or ``"Rules > Dates"``.
    ``anchor`` is the text to replace / delete / insert after (ignored by ``add``).
    ``file`` is the file of a skill package the edit acts on ('' means ``SKILL.md``); the op
    ``description`` replaces the package's frontmatter description with ``content``.
    ``support`` is how many proposals (reflection calls) the edit stands for after merging.
    """

    op: EditOp
    section: str
    content: str = ""
    anchor: str = ""
    rationale: str = ""
    support: int = 1
    trajectory_ids: tuple[str, ...] = ()
    source: str = "reflect"
    file: str = ""

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Edit:
        return cls(
            op=d["op"],
            section=d.get("section", ""),
            content=d.get("content", ""),
            anchor=d.get("anchor", ""),
            rationale=d.get("rationale", ""),
            support=int(d.get("support", 1)),
            trajectory_ids=tuple(d.get("trajectory_ids") or ()),
            source=d.get("source", "reflect"),
            file=d.get("file", ""),
        )


@dataclass(frozen=True)
class EditResult:
    edit: Edit
    status: Literal["applied", "skipped"]
    reason: str = ""
