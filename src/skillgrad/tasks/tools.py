"""Multi-turn tool-use rollout: ``ToolTask``, the base of tasks where the target calls tools.

The target sees the skill, then a short tool-protocol note. Tools are called natively (OpenAI
``tools`` / ``tool_calls``) or through a text protocol (``CALL name {json}`` / ``FINAL: answer``);
``tool_protocol="auto"`` offers both and follows whichever the model uses. Every model turn, tool
call, argument and observation lands in ``Trajectory.steps``; the final answer is scored.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

import skillgrad.safeparse as safeparse
from skillgrad.errors import ConfigError, PromptTooLongError, SkillgradError, SystemicError
from skillgrad.models.base import ModelBackend
from skillgrad.skill.document import skill_hash
from skillgrad.skill.package import prompt_text
from skillgrad.skill.text import valid_data, valid_text
from skillgrad.tasks.base import Split, scorer_failure
from skillgrad.tasks.toolkit import Tool, ToolResult
from skillgrad.types import ChatRequest, Completion, Item, Message, Score, Trajectory, Usage

ToolProtocol = Literal["native", "text", "auto"]
PROTOCOLS: tuple[str, ...] = ("native", "text", "auto")

TEXT_PROTOCOL = """## Tools
Tools you can call:
{tools}
To call a tool, reply with one line: CALL tool_name {{"argument": value}}
Example: {example}
The result comes back as: RESULT tool_name: ...
When you know the answer, reply: FINAL: your answer (one paragraph)"""
# Shown with the observation before the last allowed turn: the model must answer then.
LAST_TURN = "\nLast turn: reply FINAL: <answer> now."
# A text-protocol call's arguments kept when they are no JSON (the rest of a flooded line is
# neither shown back to the model nor stored in the trajectory).
ARGUMENT_CHARS = 2000
_SAMPLES: dict[str, Any] = {"string": "text", "integer": 2, "number": 2.5, "boolean": True}

NATIVE_NOTE = "## Tools\nCall the tools you need. When you know the answer, reply with it as text."

_CALL = re.compile(r"\bCALL\b:?\s*`?([A-Za-z_]\w*)`?")
_FINAL = re.compile(r"\bFINAL\b\s*(?:ANSWER)?\s*:\s*", re.IGNORECASE)


@dataclass(frozen=True)
class TextTurn:
    """A model turn read with the text protocol: a tool call, a final answer, or neither."""

    kind: Literal["call", "final", "none"]
    name: str = ""
    arguments: Any = None
    answer: str = ""
    end: int = 0  # where the call ends in the text: anything after it was written blind


def parse_text_turn(text: str) -> TextTurn:
    """Read ``CALL name {json}`` or ``FINAL: answer``; whichever comes first wins. The turn's
    text is valid UTF-8 (``skill.text``; same length, so ``end`` points into ``text`` too)."""
    text = valid_text(text)
    call, final = _CALL.search(text), _FINAL.search(text)
    if final and (not call or final.start() < call.start()):
        # one paragraph: weak models often ramble on (or echo the prompt) after the answer
        return TextTurn("final", answer=text[final.end() :].strip().split("\n\n")[0].strip())
    if not call:
        return TextTurn("none", answer=text.strip())
    rest = text[call.end() :].lstrip().lstrip("(").lstrip()
    offset = len(text) - len(rest)
    line_end = text.find("\n", call.end())
    line_end = len(text) if line_end < 0 else line_end
    if not rest.startswith("{"):
        return TextTurn("call", call.group(1), {}, end=line_end)
    try:
        arguments, used = safeparse.raw_decode(rest)
        arguments = valid_data(arguments)  # a JSON escape may decode to a lone surrogate
    except json.JSONDecodeError:  # also too deep or too long (safeparse.JSONBoundError)
        # a raw string: Tool.call reports why it is no JSON object
        return TextTurn("call", call.group(1), rest.splitlines()[0][:ARGUMENT_CHARS], end=line_end)
    close = text.find(")", offset + used)
    end = close + 1 if 0 <= close < line_end else offset + used
    return TextTurn("call", call.group(1), arguments, end=end)


def _native_call(call: dict[str, Any], index: str) -> tuple[str, str, Any]:
    """(id, name, arguments) of an OpenAI-style tool call (also accepts the flat form)."""
    inner = call.get("function")
    fn: dict[str, Any] = inner if isinstance(inner, dict) else call
    return str(call.get("id") or f"call_{index}"), str(fn.get("name", "")), fn.get("arguments")


def _strip_final(text: str) -> str:
    final = _FINAL.search(text)
    return text[final.end() :].strip() if final else text.strip()


class ToolTask:
    """Base for tool-use tasks. Subclasses define ``load_split``, ``tools(item)``,
    ``prompt(item)`` and ``score(output, item)`` (or ``score_trajectory`` to see the steps)."""

    name = "tool_task"
    max_steps = 6
    max_tokens = 192
    temperature = 0.0
    tool_protocol: ToolProtocol = "auto"

    def load_split(self, split: Split) -> list[Item]:
        raise NotImplementedError

    def tools(self, item: Item) -> list[Tool]:
        raise NotImplementedError

    def prompt(self, item: Item) -> str:
        raise NotImplementedError

    def score(self, output: str, item: Item) -> Score:
        raise NotImplementedError

    def score_trajectory(self, output: str, item: Item, steps: tuple[dict[str, Any], ...]) -> Score:
        return self.score(output, item)

    def protocol_example(self, tools: list[Tool]) -> str:
        """One example call shown in the text protocol (weak models copy examples well)."""
        if not tools:
            return "CALL tool_name {}"
        props = tools[0].parameters.get("properties", {})
        args = {k: _SAMPLES.get(v.get("type", ""), "text") for k, v in props.items()}
        return f"CALL {tools[0].name} {json.dumps(args)}"

    def system_message(self, skill: str, tools: list[Tool]) -> str:
        skill = prompt_text(skill)  # a package is shown rendered
        if self.tool_protocol == "native":
            note = NATIVE_NOTE
        else:
            lines = "\n".join(f"- {t.signature()}: {t.description}" for t in tools)
            note = TEXT_PROTOCOL.format(tools=lines, example=self.protocol_example(tools))
        return f"{skill.strip()}\n\n{note}" if skill.strip() else note

    async def rollout(self, item: Item, skill: str, backend: ModelBackend) -> Trajectory:
        if self.tool_protocol not in PROTOCOLS:
            raise ConfigError(
                f"tool_protocol must be one of {', '.join(PROTOCOLS)}; got {self.tool_protocol!r}"
            )
        run = _Run(self, item, skill)
        for turn in range(self.max_steps):
            try:
                completion = await backend.complete(run.request())
            except PromptTooLongError as exc:  # the conversation outgrew the context: a 0
                return run.failed(f"{type(exc).__name__}: {exc}")
            except SystemicError:
                raise
            except SkillgradError as exc:  # outlived its retries: missing data, not a 0
                return run.failed(f"{type(exc).__name__}: {exc}", infra=True)
            answer = await run.take(completion, turn)
            if answer is not None:
                return run.finish(answer)
        return run.failed(
            f"step limit reached: {self.max_steps} model turns without a final answer "
            f"({run.n_calls} tool calls made{run.last_call()})"
        )


class _Run:
    """The mutable state of one rollout: messages, steps and usage so far."""

    def __init__(self, task: ToolTask, item: Item, skill: str) -> None:
        self.task, self.item, self.skill = task, item, skill
        tools = task.tools(item)
        self.tools = {t.name: t for t in tools}
        self.schemas = tuple(t.openai_schema() for t in tools)
        self.messages: list[Message] = [
            Message("system", task.system_message(skill, tools)),
            Message("user", task.prompt(item)),
        ]
        self.steps: list[dict[str, Any]] = []
        self.usage = Usage()
        self.n_calls = 0

    def request(self) -> ChatRequest:
        native = self.task.tool_protocol != "text"
        return ChatRequest(
            messages=tuple(self.messages),
            temperature=self.task.temperature,
            max_tokens=self.task.max_tokens,
            tools=self.schemas if native else (),
            # text protocol: stop before the model invents the tool's result itself
            stop=("\nRESULT",) if self.task.tool_protocol != "native" else (),
        )

    async def take(self, completion: Completion, turn: int) -> str | None:
        """Record one model turn, run the tools it asked for; the final answer, or None."""
        self.usage = self.usage + completion.usage
        text, protocol = completion.text, self.task.tool_protocol
        if completion.tool_calls and protocol != "text":
            calls = [_native_call(c, f"{turn}_{i}") for i, c in enumerate(completion.tool_calls)]
            normal = tuple(
                {"id": cid, "type": "function", "function": {"name": n, "arguments": _dump(a)}}
                for cid, n, a in calls
            )
            self.messages.append(Message("assistant", text, tool_calls=normal))
            self.steps.append({"type": "model", "turn": turn, "text": text, "tool_calls": normal})
            for cid, name, args in calls:
                result = await self.call(name, args, "native")
                self.messages.append(Message("tool", result.observation, name, tool_call_id=cid))
            if turn + 2 == self.task.max_steps:
                self.messages.append(Message("user", LAST_TURN.strip()))
            return None
        self.steps.append({"type": "model", "turn": turn, "text": text})
        parsed = parse_text_turn(text) if protocol != "native" else TextTurn("none")
        if parsed.kind != "call":
            self.messages.append(Message("assistant", text))
            return _strip_final(text) if protocol == "native" else parsed.answer
        # The history keeps the turn only up to its call: text after it (often an invented
        # result or a guessed FINAL) was written before the tool answered and misleads later turns.
        self.messages.append(Message("assistant", text[: parsed.end].rstrip()))
        result = await self.call(parsed.name, parsed.arguments, "text")
        note = LAST_TURN if turn + 2 == self.task.max_steps else ""
        self.messages.append(Message("user", f"RESULT {parsed.name}: {result.observation}{note}"))
        return None

    async def call(self, name: str, arguments: Any, protocol: str) -> ToolResult:
        self.n_calls += 1
        tool = self.tools.get(name)
        if tool is None:
            known = ", ".join(self.tools) or "none"
            msg = f"unknown tool {name!r}"
            result = ToolResult(f"error: {msg}. Available tools: {known}.", ok=False, error=msg)
        else:
            result = await tool.call(arguments)
        self.steps.append(
            {
                "type": "tool_call",
                "protocol": protocol,
                "tool": name,
                "arguments": _dump(arguments) if safeparse.too_deep(arguments) else arguments,
                "observation": result.observation,
                "ok": result.ok,
                "error": result.error,
            }
        )
        return result

    def last_call(self) -> str:
        calls = [s for s in self.steps if s["type"] == "tool_call"]
        if not calls:
            return ""
        last = calls[-1]
        # cut: a flooded argument must not flood the feedback; the reason is in the observation
        arguments, seen = _dump(last["arguments"])[:80], last["observation"][:160]
        return f"; last: {last['tool']}({arguments}) -> {seen}"

    def finish(self, answer: str) -> Trajectory:
        self.steps.append({"type": "final", "answer": answer})
        try:
            score = self.task.score_trajectory(answer, self.item, tuple(self.steps))
        except SystemicError:
            raise
        except Exception as exc:  # the reply broke the scorer: this item's verdict, not a crash
            score, error = scorer_failure(exc)
            self.steps.append({"type": "error", "reason": error})
            return self._trajectory(answer, score, error)
        return self._trajectory(answer, score, None)

    def failed(self, reason: str, output: str = "", *, infra: bool = False) -> Trajectory:
        """The item failed; ``infra``: the target could not be reached (missing data)."""
        self.steps.append({"type": "error", "reason": reason})
        score = Score(0.0, False, f"error: {reason}")
        return self._trajectory(output, score, reason, reason if infra else None)

    def _trajectory(
        self, output: str, score: Score, error: str | None, infra: str | None = None
    ) -> Trajectory:
        return Trajectory(
            item_id=self.item.id,
            skill_hash=skill_hash(self.skill),
            messages=tuple(self.messages),
            output=output,
            score=score,
            reference=self.item.reference,
            error=error,
            infra_error=infra,
            usage=self.usage,
            steps=tuple(self.steps),
        )


def _dump(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments
    problem = safeparse.too_deep(arguments)
    if problem:  # json.dumps would recurse as deep: the record says what was sent instead
        return f"<arguments {problem}: not kept>"
    try:
        return json.dumps(arguments)
    except (TypeError, ValueError):
        return str(arguments)


def tool_calls_of(steps: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    """The tool-call steps of a trajectory (for scorers that check which tools were used)."""
    return [s for s in steps if s.get("type") == "tool_call"]


__all__ = ["PROTOCOLS", "TextTurn", "ToolProtocol", "ToolTask", "parse_text_turn", "tool_calls_of"]
