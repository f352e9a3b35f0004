"""The public API is exactly ``skillgrad.__all__`` (locked, like httpx does)."""

import skillgrad

EXPECTED = {
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
    "load_config",
    "run_training",
}


def test_public_names_are_locked() -> None:
    assert set(skillgrad.__all__) == EXPECTED
    for name in skillgrad.__all__:
        assert hasattr(skillgrad, name), name
