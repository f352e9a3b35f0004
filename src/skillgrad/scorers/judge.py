"""The ``llm_judge`` scorer: a model grades the output against a rubric and returns a
schema-checked verdict (async; needs a backend, given at build time or with ``bind``)."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from skillgrad.errors import ConfigError, ModelError
from skillgrad.models.base import ModelBackend
from skillgrad.scorers.base import BaseScorer, run_sync
from skillgrad.scorers.textnorm import extract_json
from skillgrad.types import ChatRequest, Item, Message, Score


class Verdict(BaseModel):
    """The judge's answer; its JSON schema is sent as ``response_schema``."""

    model_config = ConfigDict(extra="ignore")
    score: float = Field(ge=0.0, le=1.0)
    passed: bool
    feedback: str = Field(min_length=1)


VERDICT_SCHEMA: dict[str, Any] = Verdict.model_json_schema()

_JUDGE_SYSTEM = (
    "You grade one answer against a rubric. Reply with JSON only: "
    '{"score": <number 0..1>, "passed": <true|false>, "feedback": "<what is right or wrong and '
    'why, citing the answer>"}.'
)


class LLMJudgeScorer(BaseScorer):
    """A model grades the output with ``rubric`` at temperature 0 and returns a schema-checked
    verdict. Async: use ``ascore``. The backend is given at build time or with ``bind``; call
    caching belongs to the backend wrappers. A verdict invalid twice raises ModelError (one
    item's failure, recorded in its trajectory)."""

    name = "llm_judge"
    deterministic = False
    needs_reference = False

    def __init__(
        self, rubric: str, backend: ModelBackend | None = None, max_tokens: int = 400
    ) -> None:
        if not rubric.strip():
            raise ConfigError("llm_judge needs a non-empty 'rubric'")
        self.rubric, self.backend, self.max_tokens = rubric, backend, max_tokens

    def bind(self, backend: ModelBackend) -> None:
        self.backend = backend

    def _messages(self, output: str, item: Item) -> list[Message]:
        task = item.input if isinstance(item.input, str) else json.dumps(item.input, default=str)
        parts = [f"## Rubric\n{self.rubric}", f"## Task\n{task[:6000]}"]
        if item.reference is not None:
            parts.append(f"## Reference answer\n{json.dumps(item.reference, default=str)[:4000]}")
        parts.append(f"## Answer to grade\n{output[:8000]}")
        return [Message("system", _JUDGE_SYSTEM), Message("user", "\n\n".join(parts))]

    def _parse(self, text: str) -> tuple[Verdict | None, str]:
        value, why = extract_json(text)
        if why:
            return None, why
        try:
            return Verdict.model_validate(value), ""
        except ValidationError as exc:
            errors = [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
            return None, "; ".join(errors)

    async def ascore(self, output: str, item: Item) -> Score:
        if not (output or "").strip():
            return Score(0.0, False, "empty output; nothing for the judge to grade")
        if self.backend is None:
            raise ConfigError("llm_judge has no model: pass backend= or call bind(backend)")
        messages = self._messages(output, item)
        problem = ""
        for _ in range(2):
            request = ChatRequest(
                messages=tuple(messages),
                temperature=0.0,
                max_tokens=self.max_tokens,
                response_schema=VERDICT_SCHEMA,
            )
            completion = await self.backend.complete(request)
            verdict, problem = self._parse(completion.text)
            if verdict is not None:
                return Score(verdict.score, verdict.passed, f"judge: {verdict.feedback}")
            messages += [
                Message("assistant", completion.text),
                Message("user", f"That verdict is invalid ({problem}). Reply with the JSON only."),
            ]
        raise ModelError(f"llm_judge verdict failed schema validation twice: {problem}")

    def score(self, output: str, item: Item) -> Score:
        score: Score = run_sync(self.ascore(output, item))
        return score


__all__ = ["VERDICT_SCHEMA", "LLMJudgeScorer", "Verdict"]
