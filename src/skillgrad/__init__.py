"""skillgrad: train agent skill documents the way deep-learning frameworks train weights.

A skill (Markdown) is the system prompt of a frozen target model; an optimizer model turns
scored trajectories into structured edits, which are merged, clipped to a learning rate, applied
and accepted only if a held-out selection split improves. Start with ``skillgrad train``, or
from Python with ``skillgrad.fit(trainset, valset, scorer=..., optimizer=..., target=...)``.
"""

from skillgrad.callbacks import Callback, Control
from skillgrad.config import Config, load_config
from skillgrad.errors import (
    BudgetExceeded,
    ConfigError,
    DataError,
    ModelError,
    PermanentModelError,
    SkillgradError,
    TransientModelError,
)
from skillgrad.fit import FitResult, afit, fit
from skillgrad.models.base import ModelBackend
from skillgrad.models.spec import ModelSpec
from skillgrad.scorers.base import Scorer
from skillgrad.session import RunResult, arun_training, run_training
from skillgrad.skill.document import Skill
from skillgrad.tasks.base import Task
from skillgrad.tasks.chat import ChatTask
from skillgrad.types import (
    ChatRequest,
    Completion,
    Edit,
    EditResult,
    GateResult,
    Item,
    Message,
    Score,
    Trajectory,
    Usage,
)

__version__ = "0.1.0"

__all__ = [
    "BudgetExceeded",
    "Callback",
    "ChatRequest",
    "ChatTask",
    "Completion",
    "Config",
    "ConfigError",
    "Control",
    "DataError",
    "Edit",
    "EditResult",
    "FitResult",
    "GateResult",
    "Item",
    "Message",
    "ModelBackend",
    "ModelError",
    "ModelSpec",
    "PermanentModelError",
    "RunResult",
    "Score",
    "Scorer",
    "Skill",
    "SkillgradError",
    "Task",
    "Trajectory",
    "TransientModelError",
    "Usage",
    "__version__",
    "afit",
    "arun_training",
    "fit",
    "load_config",
    "run_training",
]
