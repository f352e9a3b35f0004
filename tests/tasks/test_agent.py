"""Tool-use rollout: native and text protocols, observations fed back, bad arguments recovered,
the step limit, and the tool_use benchmark's splits and scorer."""

from __future__ import annotations

import json
from typing import Any

import pytest

from skillgrad.benchmarks.tool_use import ToolUseBenchmark
from skillgrad.errors import ConfigError, TransientModelError
from skillgrad.tasks.toolkit import Tool, make_tool
from skillgrad.tasks.tools import ToolTask, parse_text_turn, tool_calls_of
from skillgrad.testing import FunctionBackend, ScriptedBackend
from skillgrad.types import ChatRequest, Completion, Item, Score, Trajectory, to_json


def square(x: int) -> int:
    """Square an integer."""
    return x * x


class SquareTask(ToolTask):
    """What is N squared? Only the tool knows."""

    name = "square"

    def __init__(self, protocol: str = "auto", max_steps: int = 4) -> None:
        self.tool_protocol = protocol  # type: ignore[assignment]
        self.max_steps = max_steps

    def load_split(self, split: Any) -> list[Item]:
        return [Item(id=f"{split}-0", input=7, reference="49")]

    def tools(self, item: Item) -> list[Tool]:
        return [make_tool(square)]

    def prompt(self, item: Item) -> str:
        return f"What is {item.input} squared?"

    def score(self, output: str, item: Item) -> Score:
        ok = output.strip() == item.reference
        return Score(float(ok), ok, "correct" if ok else f"expected {item.reference}")


def native_call(args: Any, call_id: str = "c1") -> Completion:
    arguments = args if isinstance(args, str) else json.dumps(args)
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": "square", "arguments": arguments},
    }
    return Completion(text="", tool_calls=(call,))


def last_tool_message(request: ChatRequest) -> str:
    return next(m.content for m in reversed(request.messages) if m.role == "tool")


async def test_native_protocol_calls_tool_and_scores_final_answer() -> None:
    backend = ScriptedBackend()
    backend.expect("What is 7 squared?", native_call({"x": 7}))
    backend.expect(lambda r: last_tool_message(r) == "49", "49")
    traj = await SquareTask("native").rollout(SquareTask().load_split("train")[0], "SKILL", backend)
    backend.assert_done()
    assert traj.score.passed and traj.output == "49" and traj.error is None
    first = backend.calls[0]
    assert first.tools[0]["function"]["name"] == "square"
    assert first.tools[0]["function"]["parameters"]["properties"]["x"]["type"] == "integer"
    assert first.messages[0].content.startswith("SKILL")
    second = backend.calls[1]
    assert second.messages[2].tool_calls[0]["id"] == "c1"
    assert second.messages[3].role == "tool" and second.messages[3].tool_call_id == "c1"
    calls = tool_calls_of(traj.steps)
    assert calls == [
        {
            "type": "tool_call",
            "protocol": "native",
            "tool": "square",
            "arguments": '{"x": 7}',
            "observation": "49",
            "ok": True,
            "error": "",
        }
    ]
    assert traj.steps[-1] == {"type": "final", "answer": "49"}
    again = Trajectory.from_json(json.loads(json.dumps(to_json(traj))))
    assert again.messages == traj.messages and list(again.steps) == to_json(traj.steps)


async def test_text_protocol_calls_tool_and_scores_final_answer() -> None:
    backend = ScriptedBackend()
    backend.expect("What is 7 squared?", 'I will use the tool.\nCALL square {"x": 7}')
    backend.expect("RESULT square: 49", "FINAL: 49")
    task = SquareTask("text")
    traj = await task.rollout(task.load_split("val")[0], "SKILL", backend)
    backend.assert_done()
    assert traj.score.passed, traj.score.feedback
    assert backend.calls[0].tools == ()
    system = backend.calls[0].messages[0].content
    assert "CALL tool_name" in system and "square(x: integer)" in system
    assert [s["type"] for s in traj.steps] == ["model", "tool_call", "model", "final"]


@pytest.mark.parametrize("protocol", ["native", "text"])
async def test_bad_arguments_become_an_observation_and_the_model_recovers(protocol: str) -> None:
    backend = ScriptedBackend()
    if protocol == "native":
        backend.expect("What is 7 squared?", native_call({"y": "seven"}))
        backend.expect(lambda r: "invalid arguments" in last_tool_message(r), native_call({"x": 7}))
        backend.expect(lambda r: last_tool_message(r) == "49", "49")
    else:
        backend.expect("What is 7 squared?", "CALL square {x: 7}")
        backend.expect("not valid JSON", 'CALL square {"x": "seven"}')
        backend.expect("RESULT square: error: invalid arguments", 'CALL square {"x": 7}')
        backend.expect("RESULT square: 49", "FINAL: 49")
    task = SquareTask(protocol, max_steps=5)
    traj = await task.rollout(task.load_split("test")[0], "", backend)
    backend.assert_done()
    assert traj.score.passed
    calls = tool_calls_of(traj.steps)
    assert [c["ok"] for c in calls][-1] is True and not calls[0]["ok"]
    assert "square(x: integer)" in calls[0]["observation"]


async def test_unknown_tool_and_tool_exception_are_observations() -> None:
    def boom(n: int) -> int:
        """Always fails."""
        raise RuntimeError(f"broken for {n}")

    class BoomTask(SquareTask):
        def tools(self, item: Item) -> list[Tool]:
            return [make_tool(square), make_tool(boom)]

    backend = ScriptedBackend()
    backend.expect("What is 7", 'CALL cube {"x": 7}')
    backend.expect("unknown tool 'cube'. Available tools: square, boom", 'CALL boom {"n": 2}')
    backend.expect("tool boom failed: RuntimeError: broken for 2", "FINAL: 49")
    traj = await BoomTask("text").rollout(Item("i", 7, "49"), "", backend)
    backend.assert_done()
    assert traj.score.passed


@pytest.mark.parametrize("protocol", ["native", "text"])
async def test_step_limit_gives_a_failed_trajectory_with_reason(protocol: str) -> None:
    reply = native_call({"x": 7}) if protocol == "native" else 'CALL square {"x": 7}'
    backend = FunctionBackend(lambda r: reply)
    traj = await SquareTask(protocol, max_steps=3).rollout(Item("i", 7, "49"), "", backend)
    assert len(backend.calls) == 3
    assert traj.error is not None and "step limit reached: 3 model turns" in traj.error
    assert not traj.score.passed and traj.score.value == 0
    assert "step limit" in traj.score.feedback
    assert len(tool_calls_of(traj.steps)) == 3 and traj.steps[-1]["type"] == "error"
    assert 'last: square({"x": 7}) -> 49' in traj.error
    # the turn before the limit tells the model to answer; earlier turns do not
    assert "Last turn: reply FINAL" in backend.calls[2].messages[-1].content
    assert "Last turn" not in backend.calls[1].messages[-1].content
    # the text protocol stops generation before the model invents a tool result
    assert backend.calls[0].stop == (("\nRESULT",) if protocol == "text" else ())


async def test_auto_protocol_follows_the_model() -> None:
    native = ScriptedBackend()
    native.expect("What is 7", native_call({"x": 7}))
    native.expect(lambda r: last_tool_message(r) == "49", "FINAL: 49")
    traj = await SquareTask("auto").rollout(Item("i", 7, "49"), "", native)
    assert traj.score.passed and native.calls[0].tools
    assert "CALL tool_name" in native.calls[0].messages[0].content
    text = ScriptedBackend()
    text.expect("What is 7", 'CALL square {"x": 7}')
    text.expect("RESULT square: 49", "FINAL: 49")
    traj = await SquareTask("auto").rollout(Item("i", 7, "49"), "", text)
    assert traj.score.passed and tool_calls_of(traj.steps)[0]["protocol"] == "text"


async def test_model_error_is_a_failed_trajectory_and_reference_stays_hidden() -> None:
    def fail(request: ChatRequest) -> str:
        raise TransientModelError("server overloaded")

    traj = await SquareTask("text").rollout(Item("i", 7, "SECRET-49"), "", FunctionBackend(fail))
    assert traj.error and "server overloaded" in traj.error and traj.score.value == 0
    assert all("SECRET" not in m.content for m in traj.messages)


def test_parse_text_turn() -> None:
    assert parse_text_turn('CALL add {"a": 1, "b": 2} then').arguments == {"a": 1, "b": 2}
    assert parse_text_turn('CALL: add({"a": 1})').name == "add"
    assert parse_text_turn("CALL stop").arguments == {}
    assert parse_text_turn("Final answer: 12").answer == "12"
    assert parse_text_turn("FINAL: 3\nCALL add {}").kind == "final"
    assert parse_text_turn("just 12").kind == "none"
    assert parse_text_turn("FINAL: 46\n\n## Tools\n- add 1 2").answer == "46"
    text = 'CALL add({"a": 1}) and more'
    assert text[: parse_text_turn(text).end] == 'CALL add({"a": 1})'
    assert parse_text_turn("CALL stop\nFINAL: 2").end == len("CALL stop")


async def test_history_keeps_a_call_turn_only_up_to_the_call() -> None:
    backend = ScriptedBackend()
    backend.expect("What is 7", 'CALL square {"x": 7}\nRESULT square: 12\nFINAL: 12')
    backend.expect("RESULT square: 49", "FINAL: 49")
    traj = await SquareTask("text").rollout(Item("i", 7, "49"), "", backend)
    assert traj.score.passed
    history = [m.content for m in backend.calls[1].messages if m.role == "assistant"]
    assert history == ['CALL square {"x": 7}']
    assert traj.steps[0]["text"].endswith("FINAL: 12")  # the raw turn stays in the steps


def test_make_tool_requires_annotations() -> None:
    def untyped(x):  # type: ignore[no-untyped-def]
        return x

    with pytest.raises(TypeError, match="no type annotation"):
        make_tool(untyped)


def reference_agent(request: ChatRequest) -> Completion | str:
    """Solves tool_use questions by really calling the tools (native protocol)."""
    question = next(m.content for m in request.messages if m.role == "user")
    tool_msgs = [m.content for m in request.messages if m.role == "tool"]
    words = question.rstrip("?").split()
    if question.startswith("How many"):
        if not tool_msgs:
            return _call("lookup_stock", {"item": words[2]})
        return tool_msgs[-1]
    pairs = [(int(w), words[i + 1]) for i, w in enumerate(words) if w.isdigit()]
    script: list[tuple[str, dict[str, Any]]] = []
    for n, (qty, product) in enumerate(pairs):
        script.append(("lookup_price", {"item": product}))
        script.append(("multiply", {"a": qty, "b": f"@{2 * n}"}))
    if len(pairs) == 2:
        script.append(("add", {"a": "@1", "b": "@3"}))
    if len(tool_msgs) == len(script):
        return f"The total is {tool_msgs[-1]}"
    name, args = script[len(tool_msgs)]
    args = {
        k: float(tool_msgs[int(v[1:])]) if str(v).startswith("@") else v for k, v in args.items()
    }
    return _call(name, args)


def _call(name: str, args: dict[str, Any]) -> Completion:
    fn = {"name": name, "arguments": json.dumps(args)}
    return Completion(text="", tool_calls=({"id": "x", "type": "function", "function": fn},))


async def test_tool_use_benchmark_reference_agent_scores_one() -> None:
    task = ToolUseBenchmark(n_train=10, seed=3, tool_protocol="native")
    for item in task.load_split("train"):
        traj = await task.rollout(item, "", FunctionBackend(reference_agent))
        assert traj.score.value == 1.0, traj.score.feedback
        assert "tools called: lookup_" in traj.score.feedback


async def test_tool_use_benchmark_wrong_answer_and_no_tool_feedback() -> None:
    task = ToolUseBenchmark(seed=1, tool_protocol="text")
    item = task.load_split("val")[0]
    traj = await task.rollout(item, "", FunctionBackend(lambda r: "FINAL: 123456"))
    assert traj.score.value == 0 and "no tool was called" in traj.score.feedback
    assert f"expected {item.reference}" in traj.score.feedback
    partial = task.score(f"{item.reference} or maybe 1", item)
    assert partial.value == pytest.approx(0.2) and not partial.passed
    assert task.score(" ".join(str(n) for n in range(200)), item).value == 0.0
    assert task.score(f"It is {item.reference}.", item).value == 1.0


def test_tool_use_benchmark_splits_are_disjoint_and_deterministic() -> None:
    a, b = ToolUseBenchmark(seed=5), ToolUseBenchmark(seed=5)
    ids = {s: [i.id for i in a.load_split(s)] for s in ("train", "val", "test")}
    assert not (set(ids["train"]) & set(ids["val"]) or set(ids["val"]) & set(ids["test"]))
    assert len(ids["train"]) == 12 and len(set(ids["train"])) == 12
    assert a.load_split("test") == b.load_split("test")
    assert a.load_split("train") != ToolUseBenchmark(seed=6).load_split("train")


def test_tool_use_benchmark_rejects_bad_options() -> None:
    with pytest.raises(ConfigError, match="tool_protocol must be one of native, text, auto"):
        ToolUseBenchmark(tool_protocol="xml")  # type: ignore[arg-type]


async def test_tool_use_partial_credit_for_calling_the_needed_tools() -> None:
    task = ToolUseBenchmark(n_train=20, seed=2, tool_protocol="text")
    item = next(i for i in task.load_split("train") if i.meta["needs"] == ["lookup_stock"])
    product = item.input.split()[2]
    backend = ScriptedBackend()
    backend.expect("How many", f'CALL lookup_stock {{"item": "{product}"}}')
    backend.expect(f"RESULT lookup_stock: {item.reference}", "FINAL: 100000")
    traj = await task.rollout(item, "", backend)
    assert traj.score.value == pytest.approx(0.3) and not traj.score.passed
    assert f"tools called: lookup_stock({{'item': '{product}'}})" in traj.score.feedback
