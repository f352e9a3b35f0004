"""The training algorithm: read ``loop.py`` first; ``api.run_training`` assembles a run."""

from skillgrad.train.api import RunResult, run_training

__all__ = ["RunResult", "run_training"]
