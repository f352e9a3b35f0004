"""The Codex CLI preset (npm ``@openai/codex``, program ``codex``).

- Runs ``codex exec --json PROMPT``: one JSON event per line (``thread.started``,
  ``item.completed`` with ``agent_message`` / ``command_execution`` / ``file_change`` /
  ``reasoning`` items, ``turn.completed`` with usage, ``turn.failed`` / ``error``).
- ``CODEX_HOME`` is a fresh folder per run; the package is installed as a user skill,
  ``$CODEX_HOME/skills/<name>/SKILL.md`` (Codex also reads ``.agents/skills`` in the project).
  Codex lists each skill's ``name``, ``description`` and path to the model, which opens the
  file with its shell tool when it decides to use the skill.
- Reaches its model through a ``model_providers.skillgrad`` entry in ``$CODEX_HOME/config.toml``:
  ``base_url`` and ``wire_api = "responses"`` (OpenAI Responses API, streamed SSE); the key is
  read from the environment variable named by ``env_key`` and never written to the file.
- ``--dangerously-bypass-approvals-and-sandbox``: no approval prompts and no Codex-internal
  sandbox, because the whole agent runs inside ours.
"""

from __future__ import annotations

from skillgrad.harnesses.base import AgentEndpoint, AgentHarness

DEFAULT_ENDPOINT = AgentEndpoint(
    base_url="https://api.openai.com/v1", model="gpt-5-codex", api_key_env="OPENAI_API_KEY"
)
CONFIG = """model = "{model}"
model_provider = "skillgrad"

[model_providers.skillgrad]
name = "skillgrad"
base_url = "{base_url}"
env_key = "SKILLGRAD_AGENT_API_KEY"
wire_api = "responses"
"""


def codex(bin: str | None = None) -> AgentHarness:
    return AgentHarness(
        name="codex",
        argv=[
            "codex",
            "exec",
            "--json",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            "-C",
            "{workdir}",
            "{prompt}",
        ],
        env={"CODEX_HOME": "{home}/.codex", "SKILLGRAD_AGENT_API_KEY": "{api_key}"},
        config_files={"{home}/.codex/config.toml": CONFIG},
        skills_dir="{home}/.codex/skills",
        output="codex_jsonl",
        bin=bin,
        install_hint="npm install -g @openai/codex",
    )


__all__ = ["CONFIG", "DEFAULT_ENDPOINT", "codex"]
