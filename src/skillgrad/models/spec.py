"""``ModelSpec``: how one role (optimizer or target) reaches its model.

Parsed from the ``models`` section of the config or from a ``provider:model`` string on the CLI.
Keys come from environment variables *named* here, never from the config itself.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from skillgrad.models.provider import provider_names


class ModelSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    provider: str = "llamacpp"
    model: str = "smollm2-135m"
    base_url: str | None = None
    api_key_env: str | None = None
    temperature: float = 0.0
    max_tokens: int | None = None
    timeout_s: float = 120.0
    max_retries: int = 4
    max_concurrency: int = 8
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    reasoning_effort: str | None = None
    # Azure OpenAI
    azure_endpoint: str | None = None
    azure_deployment: str | None = None
    api_version: str | None = None
    # in-process llama.cpp
    model_path: str | None = None
    n_ctx: int = 4096
    n_threads: int | None = None
    # extra provider options passed through verbatim (documented per provider)
    options: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def parse(cls, value: str | dict[str, Any] | ModelSpec) -> ModelSpec:
        """Accept ``"provider:model"``, a dict, or a spec."""
        if isinstance(value, ModelSpec):
            return value
        if isinstance(value, str):
            provider, sep, model = value.partition(":")
            if not sep:
                return (
                    cls(provider=provider) if provider in provider_names() else cls(model=provider)
                )
            return cls(provider=provider, model=model)
        return cls.model_validate(value)

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"


__all__ = ["ModelSpec"]
