"""The exception tree. Every message says what is wrong, where, and how to fix it.

    SkillgradError
    ├── ConfigError              bad YAML, unknown key ("did you mean"), overlapping splits
    ├── DataError                malformed dataset row / missing split (file, line, field)
    ├── SkillError               a skill document that cannot be parsed or loaded
    ├── ModelError               anything a model backend raises
    │   ├── TransientModelError  408/409/429/5xx, timeouts, truncated bodies: retried
    │   ├── PermanentModelError  400/401/403/404, missing key or extra: stops the run
    │   └── ReplayMissError      record/replay mode met a request that was not recorded
    ├── BudgetExceeded           a budget limit would be crossed by the next call
    ├── SystemicFailure          every item of a stage failed: the run stops cleanly
    ├── RunDirError              a run directory that is missing, foreign or corrupt
    └── AssetError               a pinned model or data file that is missing, changed or unreachable

Failures of a single item are *data* (an error in its Trajectory), never exceptions.
"""

from __future__ import annotations


class SkillgradError(Exception):
    """Base class of every error skillgrad raises on purpose."""


class ConfigError(SkillgradError):
    pass


class DataError(SkillgradError):
    pass


class SkillError(SkillgradError):
    pass


class ModelError(SkillgradError):
    pass


class TransientModelError(ModelError):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class PermanentModelError(ModelError):
    pass


class ReplayMissError(ModelError):
    pass


class BudgetExceeded(SkillgradError):
    pass


class SystemicFailure(SkillgradError):
    pass


class RunDirError(SkillgradError):
    pass


class AssetError(SkillgradError):
    pass


__all__ = [
    "AssetError",
    "BudgetExceeded",
    "ConfigError",
    "DataError",
    "ModelError",
    "PermanentModelError",
    "ReplayMissError",
    "RunDirError",
    "SkillError",
    "SkillgradError",
    "SystemicFailure",
    "TransientModelError",
]
