"""Record and replay model calls through a CallCache (the ``calls`` table of a run directory).

Recording is what every run already does: ``MeteredBackend`` writes each paid call into the run's
``calls.sqlite``. ``ReplayBackend`` answers only from recorded calls, keyed by
``call_key(name, request)``, and raises ``ReplayMissError`` otherwise, so a recorded run can be
re-played offline, bit for bit, with no model at all (tests fail on an unrecorded request).
"""

from __future__ import annotations

import json
from pathlib import Path

from skillgrad.errors import ReplayMissError
from skillgrad.runs.cache import CallCache, call_key
from skillgrad.runs.layout import RunPaths
from skillgrad.types import ChatRequest, Completion


def _open(cache: CallCache | str | Path, *, must_exist: bool) -> CallCache:
    if isinstance(cache, CallCache):
        return cache
    path = Path(cache)
    if must_exist and not path.is_file():
        raise ReplayMissError(
            f"replay cache {path} does not exist: point it at the "
            f"{RunPaths(path.parent).calls_db.name} of a recorded run directory"
        )
    return CallCache(path)


class ReplayBackend:
    """Answers from a recorded CallCache only. ``name`` must be the recorded backend's name
    (``provider:model``), which is part of every cache key."""

    def __init__(self, cache: CallCache | str | Path, name: str) -> None:
        self.cache = _open(cache, must_exist=True)
        self.name = name
        self.hits = 0

    async def complete(self, request: ChatRequest) -> Completion:
        hit = self.cache.get(call_key(self.name, request))
        if hit is None:
            shown = json.dumps(request.cache_payload(), ensure_ascii=False)[:300]
            raise ReplayMissError(
                f"replay: no recorded answer for this {self.name!r} request in "
                f"{self.cache.path} (the request, backend name or parameters differ from the "
                f"recording; re-record without replay to refresh it). Request: {shown}"
            )
        self.hits += 1
        return hit


__all__ = ["ReplayBackend"]
