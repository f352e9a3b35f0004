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
}


def test_public_names_are_locked() -> None:
    assert set(skillgrad.__all__) == EXPECTED
    for name in skillgrad.__all__:
        assert hasattr(skillgrad, name), name


def test_run_training_and_load_config_keep_their_signatures() -> None:
    """``skillgrad sweep`` and users call these; the session must keep them working."""
    import inspect

    params = inspect.signature(skillgrad.run_training).parameters
    assert next(iter(params)) == "cfg" and "run_dir" in params and "callbacks" in params
    assert "overrides" in inspect.signature(skillgrad.load_config).parameters
    assert inspect.iscoroutinefunction(skillgrad.afit)
