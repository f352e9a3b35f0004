"""The ``llm_judge`` scorer: a model grades the output against a rubric and returns a
schema-checked verdict (async; needs a backend, given at build time or with ``bind``).

Prompts are ``prompts/judge_system.md``, ``judge_user.md`` and ``judge_reask.md``; asking,
validating and the one re-ask are ``models.structured.ask_structured``, as for optimizer calls."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from skillgrad.errors import ConfigError, ModelError
from skillgrad.models.base import ModelBackend
from skillgrad.models.structured import ask_structured, request_schema
from skillgrad.prompts import render_prompt
from skillgrad.scorers.base import BaseScorer, run_sync
from skillgrad.types import Item, Score


class Verdict(BaseModel):
    """The judge's answer; its JSON schema is sent as ``response_schema``."""

    model_config = ConfigDict(extra="ignore")
    score: float = Field(ge=0.0, le=1.0)
    passed: bool
    feedback: str = Field(min_length=1)


VERDICT_SCHEMA: dict[str, Any] = request_schema(Verdict)  # what ask_structured sends


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

    def _user_prompt(self, output: str, item: Item) -> str:
        task = item.input if isinstance(item.input, str) else json.dumps(item.input, default=str)
        reference = ""
        if item.reference is not None:
            reference = render_prompt(
                "judge_reference", reference=json.dumps(item.reference, default=str)[:4000]
            )
        return render_prompt(
            "judge_user",
            rubric=self.rubric,
            task=task[:6000],
            reference=reference,
            answer=output[:8000],
        )

    async def ascore(self, output: str, item: Item) -> Score:
        if not (output or "").strip():
            return Score(0.0, False, "empty output; nothing for the judge to grade")
        if self.backend is None:
            raise ConfigError("llm_judge has no model: pass backend= or call bind(backend)")
        reply = await ask_structured(
            self.backend,
            render_prompt("judge_system"),
            self._user_prompt(output, item),
            Verdict,
            max_tokens=self.max_tokens,
            reask="judge_reask",
        )
        if reply.parsed is None:
            raise ModelError(f"llm_judge verdict failed schema validation twice: {reply.error}")
        verdict = reply.parsed
        return Score(verdict.score, verdict.passed, f"judge: {verdict.feedback}")

    def score(self, output: str, item: Item) -> Score:
        score: Score = run_sync(self.ascore(output, item))
        return score


__all__ = ["VERDICT_SCHEMA", "LLMJudgeScorer", "Verdict"]
