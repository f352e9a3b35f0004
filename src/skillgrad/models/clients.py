"""How to reach each remote provider: API keys from the environment, SDK clients, error mapping.

Builds the official SDK clients (with the SDK's own retries off: retry is ``RetryBackend``) for
``openai``, ``azure`` and ``openai_compatible``, turns SDK exceptions of either SDK into
``TransientModelError`` / ``PermanentModelError`` with messages that say what to fix, and reads
the token usage a response reports.
"""

from __future__ import annotations

import email.utils
import json
import os
import re
import time
from dataclasses import dataclass
from typing import Any

from skillgrad.errors import (
    ModelError,
    PermanentModelError,
    PromptTooLongError,
    TransientModelError,
)
from skillgrad.models.spec import ModelSpec
from skillgrad.redact import remember_secret
from skillgrad.types import Usage

OPENAI_BASE_URL = "https://api.openai.com/v1"
DEFAULT_AZURE_API_VERSION = "2024-10-21"
AZURE_SCOPE = "https://cognitiveservices.azure.com/.default"
# a placeholder: the SDK insists on a key, local servers ignore it
NO_KEY = "sk-no-key-required"
# option keys consumed here; every other key in ``spec.options`` goes verbatim into the body
CLIENT_OPTIONS = ("headers", "structured_mode")


@dataclass(frozen=True)
class Endpoint:
    """What an error message needs to say where a call went."""

    provider: str
    model: str
    base_url: str
    key_env: str | None = None

    @property
    def name(self) -> str:
        return f"{self.provider}:{self.model}"

    def key_hint(self) -> str:
        if self.key_env:
            return f"the key in ${self.key_env} (or set api_key_env to the variable holding it)"
        return "the server's key: set api_key_env to the environment variable that holds it"


def require_env(env: str, provider: str, model: str) -> str:
    """The value of ``env`` or a PermanentModelError naming exactly what to set."""
    value = os.environ.get(env, "").strip()
    if not value:
        raise PermanentModelError(
            f"{provider}:{model} needs an API key but environment variable {env} is not set. "
            f"Run `export {env}=...`, or set models.<role>.api_key_env to the variable that "
            "holds your key."
        )
    remember_secret(value)  # redacted from every message and file from now on
    return value


def parse_retry_after(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``Retry-After`` (seconds or HTTP date)."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


_CONTEXT_FULL = re.compile(
    r"context[ _-]?(length|window)|maximum context|too many tokens|prompt is too long", re.I
)


def status_error(status: int, message: str, headers: Any, ep: Endpoint) -> ModelError:
    """Map an HTTP error status to our transient/permanent errors."""
    where = f"{ep.name} at {ep.base_url}"
    if status in (408, 409, 425, 429) or status >= 500:
        return TransientModelError(
            f"{where}: HTTP {status} (will retry): {message}", parse_retry_after(headers)
        )
    if status in (400, 413) and _CONTEXT_FULL.search(message or ""):
        return PromptTooLongError(
            f"{where}: the prompt does not fit the model's context: {message}"
        )
    if status == 401:
        text = f"{where}: the API key was rejected (401). Check {ep.key_hint()}."
    elif status == 403:
        text = (
            f"{where}: permission denied (403) for model {ep.model!r}. Check that "
            f"{ep.key_hint()} has access to this model or deployment. Server said: {message}"
        )
    elif status == 404:
        extra = (
            " and api_version"
            if ep.provider == "azure"
            else "; base_url must be the API root (for example http://127.0.0.1:8000/v1)"
        )
        text = (
            f"{where}: not found (404). Check the model name {ep.model!r} (models.<role>.model"
            f"{', azure_deployment' if ep.provider == 'azure' else ''}), base_url{extra}. "
            f"Server said: {message}"
        )
    else:
        text = (
            f"{where}: the server rejected the request (HTTP {status}); a retry cannot fix it. "
            f"Check the model's parameters (max_tokens, temperature, tools, options). "
            f"Server said: {message}"
        )
    return PermanentModelError(text)


def sdk_error(exc: BaseException, ep: Endpoint) -> ModelError | None:
    """Map an exception from the openai or anthropic SDK; None when it is not an API error."""
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        message = str(getattr(exc, "message", "") or exc)
        headers = getattr(getattr(exc, "response", None), "headers", None)
        return status_error(status, message, headers, ep)
    kind = type(exc).__name__
    where = f"{ep.name} at {ep.base_url}"
    if "Timeout" in kind:
        return TransientModelError(f"{where}: the request timed out (will retry)")
    if "Connection" in kind:
        # also raised for bodies cut short by a dropped connection
        return TransientModelError(f"{where}: connection failed or body truncated: {exc}")
    if "ResponseValidation" in kind or isinstance(exc, json.JSONDecodeError):
        return TransientModelError(f"{where}: the server sent an invalid response body: {exc}")
    return None


def reported_usage(
    response: Any, prompt: str = "prompt_tokens", completion: str = "completion_tokens"
) -> Usage:
    """The token counts ``response.usage`` reports under the names ``prompt`` and ``completion``
    (OpenAI's by default; Anthropic's are ``input_tokens`` / ``output_tokens``); 0 for a count
    the response leaves out."""
    usage = getattr(response, "usage", None)
    return Usage(
        int(getattr(usage, prompt, 0) or 0),
        int(getattr(usage, completion, 0) or 0),
    )


def _headers(spec: ModelSpec) -> dict[str, str] | None:
    headers = spec.options.get("headers")
    return {str(k): str(v) for k, v in headers.items()} if isinstance(headers, dict) else None


def extra_body(spec: ModelSpec) -> dict[str, Any]:
    """Provider options passed through verbatim in the request body (top_k, min_p, ...)."""
    return {k: v for k, v in spec.options.items() if k not in CLIENT_OPTIONS}


def openai_client(spec: ModelSpec) -> tuple[Any, Endpoint]:
    """AsyncOpenAI for ``openai`` (key required) or ``openai_compatible`` (key optional)."""
    import openai

    env: str | None
    if spec.provider == "openai":
        env = spec.api_key_env or "OPENAI_API_KEY"
        key = require_env(env, spec.provider, spec.model)
        # as the official SDK: $OPENAI_BASE_URL when the config names no base_url (the SDK
        # itself reads $OPENAI_ORG_ID and $OPENAI_PROJECT_ID)
        base_url = spec.base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL
    else:
        if not spec.base_url:
            raise PermanentModelError(
                f"{spec.name}: openai_compatible needs base_url, the server's API root, for "
                "example http://127.0.0.1:8000/v1 (vLLM), http://127.0.0.1:11434/v1 (Ollama), "
                "http://127.0.0.1:8080/v1 (llama.cpp server)."
            )
        env = spec.api_key_env
        key = require_env(env, spec.provider, spec.model) if env else NO_KEY
        base_url = spec.base_url
    client = openai.AsyncOpenAI(
        api_key=key,
        base_url=base_url,
        timeout=spec.timeout_s,
        max_retries=0,
        default_headers=_headers(spec),
    )
    return client, Endpoint(spec.provider, spec.model, base_url, env)


def _entra_token_provider(spec: ModelSpec, env: str) -> Any:
    try:
        from azure.identity.aio import DefaultAzureCredential, get_bearer_token_provider
    except ImportError:
        raise PermanentModelError(
            f"{spec.name}: no API key: set {env} (export {env}=...), or for Microsoft Entra ID "
            "sign-in run `pip install 'skillgrad[azure]'` and `az login`."
        ) from None
    return get_bearer_token_provider(DefaultAzureCredential(), AZURE_SCOPE)


def azure_client(spec: ModelSpec) -> tuple[Any, Endpoint]:
    """AsyncAzureOpenAI: API key from the environment, else an Entra ID token provider."""
    import openai

    endpoint = spec.azure_endpoint or spec.base_url or os.environ.get("AZURE_OPENAI_ENDPOINT")
    if not endpoint:
        raise PermanentModelError(
            f"{spec.name}: set models.<role>.azure_endpoint (https://<resource>.openai.azure.com) "
            "or the AZURE_OPENAI_ENDPOINT environment variable."
        )
    env = spec.api_key_env or "AZURE_OPENAI_API_KEY"
    key = os.environ.get(env, "").strip()
    remember_secret(key)
    auth: dict[str, Any] = {"api_key": key} if key else {}
    if not key:
        auth["azure_ad_token_provider"] = _entra_token_provider(spec, env)
    version = spec.api_version or os.environ.get("OPENAI_API_VERSION") or DEFAULT_AZURE_API_VERSION
    client = openai.AsyncAzureOpenAI(
        azure_endpoint=endpoint,
        azure_deployment=spec.azure_deployment or spec.model,
        api_version=version,
        timeout=spec.timeout_s,
        max_retries=0,
        default_headers=_headers(spec),
        **auth,
    )
    return client, Endpoint("azure", spec.model, endpoint, env)


__all__ = [
    "Endpoint",
    "azure_client",
    "extra_body",
    "openai_client",
    "parse_retry_after",
    "reported_usage",
    "require_env",
    "sdk_error",
    "status_error",
]
