"""Agent harnesses: run a real agent CLI (Claude Code, Codex, any command) on one item with a
skill package installed where that agent looks for skills, and read back what it did."""

from skillgrad.harnesses.base import AgentEndpoint, AgentHarness
from skillgrad.harnesses.command import PRESETS, load_harness
from skillgrad.harnesses.events import Transcript

__all__ = ["PRESETS", "AgentEndpoint", "AgentHarness", "Transcript", "load_harness"]
