"""The Claude Code preset (npm ``@anthropic-ai/claude-code``, program ``claude``).

- Runs ``claude -p PROMPT --output-format stream-json --verbose``: one JSON event per line
  (``system`` init, ``assistant`` turns with ``tool_use`` blocks, ``user`` turns with
  ``tool_result`` blocks and injected skill text, a closing ``result`` with usage).
- Installs the package as a *project* skill, ``<workdir>/.claude/skills/<name>/SKILL.md``; Claude
  Code lists each skill's ``name`` + ``description`` to the model and loads the body (with a
  "Base directory for this skill" line, so references resolve) when the model calls ``Skill``.
- Reaches its model with ``ANTHROPIC_BASE_URL`` + ``ANTHROPIC_API_KEY`` (Anthropic Messages API,
  streamed SSE); telemetry, auto-update and other non-essential traffic are switched off.
- ``--dangerously-skip-permissions`` lets it write files and run commands unattended; it refuses
  that as root unless ``IS_SANDBOX=1``, which we set because it runs inside our sandbox.
"""

from __future__ import annotations

from skillgrad.harnesses.base import AgentEndpoint, AgentHarness

DEFAULT_ENDPOINT = AgentEndpoint(
    base_url="https://api.anthropic.com", model="claude-sonnet-4-5", api_key_env="ANTHROPIC_API_KEY"
)


def claude_code(bin: str | None = None) -> AgentHarness:
    return AgentHarness(
        name="claude_code",
        argv=[
            "claude",
            "-p",
            "{prompt}",
            "--output-format",
            "stream-json",
            "--verbose",
            "--model",
            "{model}",
            "--dangerously-skip-permissions",
        ],
        env={
            "ANTHROPIC_BASE_URL": "{base_url}",
            "ANTHROPIC_API_KEY": "{api_key}",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "IS_SANDBOX": "1",
        },
        skills_dir="{workdir}/.claude/skills",
        output="claude_stream_json",
        bin=bin,
        install_hint="npm install -g @anthropic-ai/claude-code",
    )


__all__ = ["DEFAULT_ENDPOINT", "claude_code"]
