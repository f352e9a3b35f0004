"""``ModelSpec``: how one role (optimizer or target) reaches its model.

Parsed from the ``models`` section of the config or from a ``provider:model`` string on the CLI.
Keys come from environment variables *named* here, never from the config itself.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from skillgrad.plugins import plugin_names

PROVIDER_GROUP = "skillgrad.providers"


def provider_names() -> list[str]:
    """Every registered provider name (built-ins and third-party), sorted."""
    return plugin_names(PROVIDER_GROUP)


class ModelSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    provider: str = Field(
        "llamacpp", description="registered provider (entry-point group skillgrad.providers)"
    )
    model: str = Field(
        "smollm2-135m",
        description="the provider's model name (llamacpp: a catalog name, `skillgrad models list`)",
    )
    base_url: str | None = Field(None, description="API root of the endpoint (remote providers)")
    api_key_env: str | None = Field(
        None, description="NAME of the environment variable holding the key (never the key)"
    )
    temperature: float = Field(0.0, description="sampling temperature")
    max_tokens: int | None = Field(None, description="completion limit (default: per call kind)")
    timeout_s: float = Field(120.0, description="seconds per attempt")
    max_retries: int = Field(4, description="retries of transient failures (remote providers)")
    max_concurrency: int = Field(8, description="calls in flight to this endpoint")
    requests_per_minute: float | None = Field(None, description="client-side request rate limit")
    tokens_per_minute: float | None = Field(None, description="client-side token rate limit")
    reasoning_effort: str | None = Field(None, description="reasoning models: low | medium | high")
    azure_endpoint: str | None = Field(None, description="Azure OpenAI resource endpoint")
    azure_deployment: str | None = Field(None, description="Azure deployment (default: model)")
    api_version: str | None = Field(None, description="Azure OpenAI API version")
    model_path: str | None = Field(
        None, description="llamacpp: any GGUF file, used as it is (instead of the catalog model)"
    )
    n_ctx: int = Field(4096, description="llamacpp: context window")
    n_threads: int | None = Field(
        None,
        description="llamacpp: CPU threads per call (default: every core; each thread holds one "
        "of the machine's CPU slots, docs/models.md)",
    )
    draft: Literal["prompt_lookup"] | None = Field(
        None,
        description="llamacpp: speculative decoding; prompt_lookup proposes tokens copied from "
        "the call's own context and keeps those the model confirms (same output)",
    )
    options: dict[str, Any] = Field(
        default_factory=dict, description="extra provider options passed through verbatim"
    )

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
