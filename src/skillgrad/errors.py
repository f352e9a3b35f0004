"""The exception tree. Every message says what is wrong, where, and how to fix it.

    SkillgradError
    ├── SystemicError            what a rollout re-raises: the run stops (checkpointed first)
    │   ├── ConfigError          bad YAML, unknown key ("did you mean"), overlapping splits
    │   ├── BudgetExceeded       a budget limit would be crossed by the next call
    │   ├── SystemicFailure      every item of a stage is missing data: the run stops cleanly
    │   ├── RunDirError          a run directory that is missing, foreign or corrupt
    │   ├── AssetError           a pinned model or data file that is missing, changed or unreachable
    │   └── PermanentModelError  (also a ModelError, below)
    ├── DataError                malformed dataset row / missing split (file, line, field)
    ├── SkillError               a skill document that cannot be parsed or loaded
    └── ModelError               anything a model backend raises
        ├── TransientModelError  408/409/429/5xx, timeouts, truncated bodies: retried
        ├── PermanentModelError  400/401/403/404, missing key or extra: stops the run
        └── ReplayMissError      record/replay mode met a request that was not recorded

Failures of a single item are *data* (an error in its Trajectory), never exceptions. The one
rule every rollout kind (chat, tools, code, harness, environments) follows:

- a ``SystemicError`` is re-raised: no other item would fare better (the endpoint refuses us,
  the budget is spent, the config or a pinned file is wrong);
- any other ``SkillgradError`` from a target call that outlived its retries, and an
  environment that cannot be built, reset or kept alive, is the item's *missing data*
  (``Trajectory.infra_error``): left out of the scores and the gate, not a 0;
- anything the target's reply causes (unreadable output, a tool error, a scorer that raises on
  it, an environment ``step`` that raises or hangs on its action) is the item's *score* (0, or
  an episode's score so far, with the reason in its feedback and ``Trajectory.error``).
"""

from __future__ import annotations


class SkillgradError(Exception):
    """Base class of every error skillgrad raises on purpose."""


class SystemicError(SkillgradError):
    """A failure no other item would escape: rollouts re-raise it (see the module doc)."""


class ConfigError(SystemicError):
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


class PermanentModelError(ModelError, SystemicError):
    pass


class ReplayMissError(ModelError):
    pass


class PromptTooLongError(ModelError):
    """The call does not fit the model's context window: that call's item fails (its skill and
    input, or an episode grown too long), never the run; a shorter item may still fit."""


class BudgetExceeded(SystemicError):
    pass


class SystemicFailure(SystemicError):
    pass


class NoHeadroom(SkillgradError):
    """The val split leaves nothing the gate could accept (saturated, or no detectable gain):
    the run stops before any optimizer call (``train/trust/headroom.py``)."""


class RunDirError(SystemicError):
    pass


class AssetError(SystemicError):
    pass


__all__ = [
    "AssetError",
    "BudgetExceeded",
    "ConfigError",
    "DataError",
    "ModelError",
    "NoHeadroom",
    "PermanentModelError",
    "ReplayMissError",
    "RunDirError",
    "SkillError",
    "SkillgradError",
    "SystemicError",
    "SystemicFailure",
    "TransientModelError",
]
