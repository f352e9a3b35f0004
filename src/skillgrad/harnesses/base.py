"""``AgentHarness``: how to run one agent CLI non-interactively on one prompt.

A harness is data, not code: the command line, environment and config files (templates), the
folder where the agent looks for skills, and the format of what it prints. The presets
(``claude_code``, ``codex``) are instances of it; the generic ``command`` harness is the same
model filled in by the user. Template fields: ``{prompt} {workdir} {home} {skills_dir}
{skill_name} {model} {base_url}``; ``{api_key}`` only in ``env`` values (a key never reaches disk).
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from skillgrad.errors import ConfigError
from skillgrad.harnesses.events import PARSERS, Transcript, bounded
from skillgrad.harnesses.process import (
    Access,
    Layout,
    ProcessOutcome,
    base_environment,
    program_roots,
    run_boxed,
)
from skillgrad.redact import remember_secret

OutputFormat = Literal["claude_stream_json", "codex_jsonl", "text"]
_FIELDS = {"prompt", "workdir", "home", "skills_dir", "skill_name", "model", "base_url", "api_key"}


class AgentEndpoint(BaseModel):
    """Where the agent's model is: ``base_url``, ``model``, and the *name* of the environment
    variable holding the API key (its value is read at run time and passed only in the agent's
    environment)."""

    model_config = ConfigDict(extra="forbid")

    base_url: str | None = Field(None, description="the API root the agent CLI calls")
    model: str | None = Field(None, description="model name passed to the agent")
    api_key_env: str | None = Field(None, description="env var holding the key")

    def api_key(self) -> str:
        if not self.api_key_env:
            return ""
        value = os.environ.get(self.api_key_env)
        if value is None:
            raise ConfigError(
                f"the agent endpoint's key variable {self.api_key_env} is not set: "
                f"export {self.api_key_env}=... before running"
            )
        remember_secret(value)  # never written anywhere (redact.py)
        return value


class AgentHarness(BaseModel):
    """One agent CLI. ``argv[0]`` is looked up on PATH unless ``bin`` names the program."""

    model_config = ConfigDict(extra="forbid")

    name: str = "command"
    argv: list[str] = Field(description="command line templates; no {prompt}: prompt on stdin")
    env: dict[str, str] = Field(default_factory=dict, description="extra environment (templates)")
    skills_dir: str = Field(
        "{workdir}/.skills", description="folder the package is installed under, as <name>/"
    )
    config_files: dict[str, str] = Field(
        default_factory=dict, description="path template -> content template, written per run"
    )
    output: OutputFormat = "text"
    bin: str | None = Field(None, description="path of the program (default: argv[0] on PATH)")
    install_hint: str = ""

    @field_validator("argv")
    @classmethod
    def _argv(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("argv must name a program")
        return v

    @field_validator("config_files")
    @classmethod
    def _no_key_on_disk(cls, v: dict[str, str]) -> dict[str, str]:
        if any("{api_key}" in c or "{api_key}" in p for p, c in v.items()):
            raise ValueError("{api_key} may only appear in env values: keys never reach disk")
        return v

    def program(self) -> str:
        """The program's path; ConfigError saying how to install it when it is missing."""
        given = self.bin or self.argv[0]
        found = (
            shutil.which(given)
            if os.sep not in given
            else (given if os.access(given, os.X_OK) else None)
        )
        if found is None:
            hint = f" ({self.install_hint})" if self.install_hint else ""
            raise ConfigError(
                f"harness {self.name!r}: program {given!r} not found{hint}; install it or set "
                "env.options.harness.bin to its path"
            )
        return found

    def run(
        self,
        prompt: str,
        layout: Layout,
        values: dict[str, str],
        timeout_s: float,
        access: Access | None = None,
    ) -> tuple[ProcessOutcome, Transcript]:
        """Write the config files, run the agent once in its box, and parse what it printed.
        Templates see the paths as the agent does; files are written at their host paths."""
        fields = self.fields(layout, values, prompt)
        for path, content in self.config_files.items():
            target = layout.to_host(fill(path, fields, "config_files"))
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(fill(content, fields, "config_files"), encoding="utf-8")
        program = str(Path(self.program()).resolve())  # the box binds real paths, not links
        argv = [program, *(fill(a, fields, "argv") for a in self.argv[1:])]
        env = base_environment(layout)
        env.update(access.env if access else {})
        env.update({k: fill(v, fields, "env") for k, v in self.env.items()})
        stdin = "" if any("{prompt}" in a for a in self.argv) else prompt
        outcome = run_boxed(
            argv, layout, env, timeout_s, stdin=stdin,
            extra_ro=program_roots(Path(program)), relay=access.relay if access else None,
        )  # fmt: skip
        return outcome, bounded(PARSERS[self.output](outcome.stdout))

    def fields(self, layout: Layout, values: dict[str, str], prompt: str = "") -> dict[str, str]:
        inside = {"workdir": str(layout.work(inside=True)), "home": str(layout.home(inside=True))}
        skills = fill(self.skills_dir, inside, "skills_dir")
        return {**values, **inside, "skills_dir": skills, "prompt": prompt}

    def skills_folder(self, layout: Layout) -> Path:
        """Where the package goes (``<folder>/<name>/``), as a host path."""
        return layout.to_host(self.fields(layout, {})["skills_dir"])


_FIELD = re.compile(r"\{([a-z_]+)\}")


def fill(template: str, fields: dict[str, str], where: str) -> str:
    """Replace ``{field}`` placeholders (other braces are kept, e.g. JSON or TOML)."""

    def one(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in _FIELDS:
            return m.group(0)
        if name not in fields:
            raise ConfigError(f"harness {where}: {{{name}}} is not available here")
        return fields[name]

    return _FIELD.sub(one, template)


__all__ = ["AgentEndpoint", "AgentHarness", "OutputFormat", "fill"]
