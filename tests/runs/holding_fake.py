"""A fake target that holds the run still while a file exists (loaded by path by the function
provider), so a test can act while a real ``skillgrad train`` is certainly mid-run."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

from skillgrad.models.context import current_context
from skillgrad.types import ChatRequest, Completion

_spec = importlib.util.spec_from_file_location(
    "fakes_e2e", Path(__file__).parents[1] / "fakes_e2e.py"
)
assert _spec is not None and _spec.loader is not None
fakes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fakes)


class HoldingTarget(fakes.FakeTarget):  # type: ignore[misc,name-defined]
    """FakeTarget that, from step ``from_step`` on, waits while ``hold`` exists; it creates
    ``hold + ".reached"`` when it starts waiting."""

    def __init__(self, hold: str, from_step: int = 0, latency: float = 0.0) -> None:
        super().__init__(latency)
        self.hold = Path(hold)
        self.from_step = from_step

    async def complete(self, request: ChatRequest) -> Completion:
        if current_context().step >= self.from_step and self.hold.exists():
            Path(f"{self.hold}.reached").touch()
            while self.hold.exists():
                await asyncio.sleep(0.01)
        result: Completion = await super().complete(request)
        return result
