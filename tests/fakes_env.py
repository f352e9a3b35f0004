"""A fake target that plays ``skillgrad.testing.TinyEnv`` (importable by file path).

It plays the puzzle right only when its skill holds the fake optimizer's good rule
(``fakes_e2e.GOOD_RULE``: "UPPERCASE"); otherwise it looks around, so the fake optimizer of
``fakes_e2e`` teaches it exactly as it teaches the toy task's fake target.
"""

from __future__ import annotations

import re

from fakes_e2e import _logged
from skillgrad.testing import FunctionBackend, system_text, user_text
from skillgrad.types import ChatRequest


def play(observation: str) -> str:
    """The right next action of TinyEnv for ``observation``."""
    if found := re.search(r"closed (\w+)", observation):
        return f"open {found.group(1)}"
    if found := re.search(r"a (\w+) inside", observation):
        return f"take {found.group(1)}"
    return "unlock door"


def explorer(request: ChatRequest) -> str:
    """Plays TinyEnv right when the valid actions are listed (exploration) or when its skill
    shows a worked episode; else looks around (fails)."""
    user = user_text(request)
    if "Valid actions:" in user:
        listed = user.split("Valid actions:", 1)[1].strip().split(" | ")
        return next((a for a in listed if a != "look"), "look")
    if "Action: open" in system_text(request):
        return play(user)
    return "look"


def env_target_reply(request: ChatRequest) -> str:
    if "UPPERCASE" not in system_text(request) or "lowercase" in system_text(request):
        return "look"
    return play(user_text(request))


class FakeEnvTarget(FunctionBackend):
    def __init__(self, latency: float = 0.0) -> None:
        super().__init__(_logged(env_target_reply, "target"), "function:fake-env-target", latency)


class HangingEnvTarget(FunctionBackend):
    """Asks ``TinyEnv(traps=True)`` to hang: the run then waits inside an environment step."""

    def __init__(self) -> None:
        super().__init__(lambda request: "hang", "function:fake-hanging-env-target")


def containers(seed: int) -> list[str]:
    """The containers TinyEnv's two train episodes hold at data seed ``seed``."""
    from skillgrad.tasks.environment import EnvironmentTask
    from skillgrad.testing import TinyEnv

    task = EnvironmentTask("skillgrad.testing:TinyEnv", n_train=2, n_val=2, seed=seed)
    starts = [TinyEnv().reset(seed=i.input["seed"])[0] for i in task.load_split("train")]
    return [start.split("closed ")[1].split()[0] for start in starts]


def mixed_seed() -> int:
    """The first data seed whose two train episodes hold different containers."""
    return next(s for s in range(50) if len(set(containers(s))) == 2)
