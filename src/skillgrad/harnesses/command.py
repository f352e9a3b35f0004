"""The generic ``command`` harness: any CLI, described in the config.

env:
  task: harness
  options:
    harness:
      name: command
      argv: [my-agent, --cwd, "{workdir}", --prompt, "{prompt}"]
      env: {MY_AGENT_URL: "{base_url}", MY_AGENT_KEY: "{api_key}"}
      skills_dir: "{workdir}/.agents/skills"
      output: text            # or claude_stream_json / codex_jsonl
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from skillgrad.errors import ConfigError
from skillgrad.harnesses.base import AgentEndpoint, AgentHarness
from skillgrad.harnesses.claude_code import DEFAULT_ENDPOINT as CLAUDE_ENDPOINT
from skillgrad.harnesses.claude_code import claude_code
from skillgrad.harnesses.codex import DEFAULT_ENDPOINT as CODEX_ENDPOINT
from skillgrad.harnesses.codex import codex

PRESETS = {"claude_code": (claude_code, CLAUDE_ENDPOINT), "codex": (codex, CODEX_ENDPOINT)}


def load_harness(spec: str | dict[str, Any]) -> tuple[AgentHarness, AgentEndpoint]:
    """A preset by name (or ``{"preset": name, "bin": path, "env": {...}}``: the program's path
    and extra environment), or a command harness from its fields; with the preset's default
    endpoint (empty for a command harness)."""
    if isinstance(spec, str):
        spec = {"preset": spec}
    spec = dict(spec)
    preset = spec.pop("preset", None)
    if preset is not None:
        if preset not in PRESETS:
            raise ConfigError(
                f"unknown harness preset {preset!r}; known: {', '.join(PRESETS)} "
                "(or describe any CLI with argv / env / skills_dir / output)"
            )
        unknown = set(spec) - {"bin", "env"}
        if unknown:
            raise ConfigError(
                f"harness preset {preset!r} takes only 'bin' and 'env', not {sorted(unknown)}"
            )
        make, endpoint = PRESETS[preset]
        harness = make(spec.get("bin"))
        extra = spec.get("env") or {}
        if not isinstance(extra, dict):
            raise ConfigError(f"harness preset {preset!r}: 'env' must map names to values")
        return harness.model_copy(update={"env": {**harness.env, **extra}}), endpoint
    try:
        return AgentHarness.model_validate(spec), AgentEndpoint()
    except ValidationError as exc:
        errors = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"env.options.harness: {errors}") from None


__all__ = ["PRESETS", "load_harness"]
