"""``provider: litellm``: Gemini, Bedrock, Vertex, Mistral and the rest through LiteLLM's
``acompletion`` (optional extra ``skillgrad[litellm]``).

``model`` is LiteLLM's model string (``gemini/gemini-2.0-flash``, ``bedrock/...``,
``openai/<model>`` with ``base_url`` for any OpenAI-compatible server). Keys come from the
environment variables LiteLLM reads for each vendor, or from ``api_key_env``. LiteLLM's own
retries are off: retry and rate limiting are the run's wrappers.
"""

from __future__ import annotations

import os
from typing import Any

from skillgrad.errors import ModelError, TransientModelError
from skillgrad.models.clients import NO_KEY, Endpoint, extra_body, require_env, sdk_error
from skillgrad.models.openai import as_openai_tool, chat_completion
from skillgrad.models.registry import missing_sdk
from skillgrad.models.spec import ModelSpec
from skillgrad.types import ChatRequest, Completion


class LiteLLMBackend:
    """``complete(request)`` via ``litellm.acompletion``; errors mapped to our two kinds."""

    def __init__(self, spec: ModelSpec) -> None:
        # skillgrad prices calls itself: no fetch of LiteLLM's remote cost map at import
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        try:
            import litellm
        except ImportError as exc:
            raise missing_sdk(spec.name, "litellm", exc) from None
        litellm.suppress_debug_info = True  # no "Give Feedback" banners on stdout
        self._acompletion = litellm.acompletion
        self.name = spec.name
        self.model = spec.model
        self.max_tokens = spec.max_tokens
        self.timeout_s = spec.timeout_s
        self.base_url = spec.base_url
        self.api_key = (
            require_env(spec.api_key_env, "litellm", spec.model) if spec.api_key_env else None
        )
        self.body = extra_body(spec)
        self.endpoint = Endpoint("litellm", spec.model, spec.base_url or "(litellm default)")

    async def complete(self, request: ChatRequest) -> Completion:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [m.to_openai() for m in request.messages],
            "max_tokens": self.max_tokens if self.max_tokens is not None else request.max_tokens,
            "temperature": request.temperature,
            "timeout": self.timeout_s,
            "num_retries": 0,
        }
        if self.base_url:
            kwargs["api_base"] = self.base_url
        if self.api_key:
            kwargs["api_key"] = self.api_key
        elif self.base_url:  # a local OpenAI-compatible server: the SDK insists on some key
            kwargs["api_key"] = NO_KEY
        if request.seed is not None:
            kwargs["seed"] = request.seed
        if request.stop:
            kwargs["stop"] = list(request.stop)
        if request.tools:
            kwargs["tools"] = [as_openai_tool(t) for t in request.tools]
        if request.response_schema is not None:
            kwargs["response_format"] = {"type": "json_object"}
        kwargs.update(self.body)
        try:
            response = await self._acompletion(**kwargs)
        except Exception as exc:
            raise _mapped(exc, self.endpoint) from exc
        return chat_completion(response, self.endpoint)


def _mapped(exc: Exception, ep: Endpoint) -> Exception:
    mapped: ModelError | None = sdk_error(exc, ep)
    if mapped is not None:
        return mapped
    kind = type(exc).__name__
    if kind in ("APIConnectionError", "ServiceUnavailableError", "InternalServerError"):
        return TransientModelError(f"{ep.name}: {kind}: {exc}")
    return exc


__all__ = ["LiteLLMBackend"]
