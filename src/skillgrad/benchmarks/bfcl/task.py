"""``env.task: bfcl``: BFCL's single-turn function-calling categories in its prompting mode.

The target gets the skill, then BFCL's own default system prompt (the output format
``[func(a=1, b="x")]`` and the function documentation as JSON), then the question. Its reply is
read with ``ast`` and checked by the rules of BFCL's AST checker (``bfcl.check``), with partial
credit (``bfcl.score``). Splits are a seeded shuffle of one category's file, or of the pooled
files of a list of categories (e.g. ``[simple, irrelevance]``: when to call and when not to):
disjoint, the same on every machine for the same ``seed``.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any, cast

from skillgrad.benchmarks.bfcl.data import Entry, category_of, read_entries
from skillgrad.benchmarks.bfcl.score import Kind, score_reply
from skillgrad.benchmarks.splits import check_int, check_sizes, seeded_cut
from skillgrad.errors import ConfigError
from skillgrad.skill.package import prompt_text
from skillgrad.tasks.base import SPLITS, Split
from skillgrad.tasks.chat import ChatTask
from skillgrad.types import Item, Message, Role, Score

# BFCL's default system prompt (bfcl_eval/constants/default_prompts.py, "classic" style, Python
# calls, JSON docs, plain text), reproduced as BFCL renders it, missing space included.
_PERSONA_TASK = (
    "You are an expert in composing functions.You are given a question and a set of possible "
    "functions. Based on the question, you will need to make one or more function/tool calls to "
    "achieve the purpose. If none of the functions can be used, point it out. If the given "
    "question lacks the parameters required by the function, also point it out."
)
_CALL_FORMAT = (
    "You should only return the function calls in your response.\n\nIf you decide to invoke any "
    "of the function(s), you MUST put it in the format of [func_name1(params_name1=params_value1,"
    " params_name2=params_value2...), func_name2(params)].  You SHOULD NOT include any other "
    "text in the response."
)
_MULTI_TURN = (
    "At each turn, you should try your best to complete the tasks requested by the user within "
    "the current turn. Continue to output functions to call until you have fulfilled the user's "
    "request to the best of your ability. Once you have no more functions to call, the system "
    "will consider the current turn complete and proceed to the next turn or task."
)
_PYTHON_HINT = " Note that the provided function is in Python 3 syntax."
REFERENCE_WORDS: dict[Kind, str] = {
    "no_call": "no function call (none of the given functions fits the question)",
    "any_call": "at least one call of a given function (the question is answerable)",
}


def bfcl_system_prompt(functions: list[dict[str, Any]]) -> str:
    """BFCL's system prompt for these functions (with BFCL's Python hint on each description)."""
    docs = copy.deepcopy(functions)
    for doc in docs:
        doc["description"] = str(doc.get("description", "")) + _PYTHON_HINT
    listing = json.dumps(docs, indent=4)
    tools = f"Here is a list of functions in json format that you can invoke.\n{listing}\n"
    return f"{_PERSONA_TASK}\n\n{_CALL_FORMAT}\n\n{_MULTI_TURN}\n\n{tools}"


@dataclass
class BfclBenchmark(ChatTask):
    """BFCL (Berkeley Function Calling Leaderboard v4, Apache-2.0), one category or a list of
    them pooled; options ``category`` (see ``bfcl.data.CATEGORIES``), ``n_train``, ``n_val``,
    ``n_test`` (None: all the rest), ``seed``, ``max_tokens``. Needs ``skillgrad data pull bfcl``
    once."""

    category: str | list[str] = "simple"
    n_train: int = 40
    n_val: int = 40
    n_test: int | None = 80
    seed: int = 0
    max_tokens: int = 256
    name: str = "bfcl"
    _categories: tuple[tuple[str, Kind], ...] = field(default=(), init=False, repr=False)
    _splits: dict[str, list[Item]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self._categories = _categories(self.category)
        names = [name for name, _ in self._categories]
        self.category = names[0] if len(names) == 1 else names
        check_sizes("bfcl", self.n_train, self.n_val, self.n_test, self.seed)
        check_int("bfcl", "max_tokens", self.max_tokens, 1)

    def load_split(self, split: Split) -> list[Item]:
        if split not in SPLITS:
            raise ConfigError(f"unknown split {split!r}; use one of {', '.join(SPLITS)}")
        if not self._splits:
            items = [
                self._item(e, name, kind)
                for name, kind in self._categories
                for e in read_entries(name)
            ]
            names = "+".join(name for name, _ in self._categories)
            key = f"bfcl:{names}:{self.seed}"  # one category: the key of its own splits
            what = f"bfcl: category {names!r}"
            self._splits = seeded_cut(items, key, self.n_train, self.n_val, self.n_test, what=what)
        return list(self._splits[split])

    @staticmethod
    def _item(entry: Entry, category: str, kind: Kind) -> Item:
        reference: Any = entry.gold if kind == "calls" else REFERENCE_WORDS[kind]
        return Item(
            id=entry.id,
            input={"messages": entry.messages, "functions": entry.functions},
            reference=reference,
            meta={"category": category, "kind": kind},
        )

    def messages(self, item: Item, skill: str) -> tuple[Message, ...]:
        """Skill, then BFCL's system prompt (and the question's own system text, which BFCL
        appends to its prompt), then the question's turns."""
        turns: list[dict[str, str]] = item.input["messages"]
        system = [prompt_text(skill).strip()] if skill.strip() else []
        system.append(bfcl_system_prompt(item.input["functions"]))
        system += [str(t["content"]) for t in turns if t["role"] == "system"]
        rest = [Message(cast(Role, t["role"]), str(t["content"])) for t in turns]
        rest = [m for m in rest if m.role != "system"]
        return (Message("system", "\n\n".join(system)), *rest)

    def example_context(self, item: Item) -> str:
        """A worked example's context line: the functions the question was asked with, as
        signatures (the reply's right call, or none, depends on them; BFCL's full listing is
        too long to show)."""
        return "Functions: " + "; ".join(_signature(f) for f in item.input["functions"])

    def prompt(self, item: Item) -> str:
        """The question's last user turn (the full view is ``messages``)."""
        users = [t for t in item.input["messages"] if t["role"] == "user"]
        return str(users[-1]["content"]) if users else ""

    def score(self, output: str, item: Item) -> Score:
        kind: Kind = item.meta["kind"]
        gold = item.reference if kind == "calls" else []
        return score_reply(output, kind, gold, item.input["functions"])


def _signature(doc: Any) -> str:
    """``name(param, ...)`` of a function's documentation; ``?`` marks an optional one."""
    if not isinstance(doc, dict):
        return "?"
    params = doc.get("parameters")
    props = params.get("properties") if isinstance(params, dict) else None
    required = params.get("required") if isinstance(params, dict) else None
    need = set(required) if isinstance(required, list) else set()
    names = [
        str(p) + ("" if p in need else "?") for p in (props if isinstance(props, dict) else {})
    ]
    return f"{doc.get('name', '?')}({', '.join(names)})"


def _categories(option: object) -> tuple[tuple[str, Kind], ...]:
    """(category, kind) of each category named by the ``category`` option: one name or a
    non-empty list of distinct names (aliases resolved)."""
    names = [option] if isinstance(option, str) else option
    if not isinstance(names, list | tuple) or not names:
        raise ConfigError(
            f"bfcl: category must be a category name or a list of them, got {option!r} "
            "(e.g. category: simple, or category: [simple, irrelevance])"
        )
    out: list[tuple[str, Kind]] = []
    for name in names:
        if not isinstance(name, str):
            raise ConfigError(f"bfcl: category {name!r} is not a name (in {option!r})")
        canonical, _, kind = category_of(name)
        if any(canonical == seen for seen, _ in out):
            raise ConfigError(f"bfcl: category {canonical!r} is listed twice in {option!r}")
        out.append((canonical, kind))
    return tuple(out)


__all__ = ["REFERENCE_WORDS", "BfclBenchmark", "bfcl_system_prompt"]
