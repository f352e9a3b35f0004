"""One optimizer call of a given kind: its own system prompt and user template, one schema.

Call kinds: ``reflect``, ``deep_reflect``, ``revise``, ``contrast``, ``merge``, ``rank``,
``slow_update``, ``meta_skill``, ``adherence``; the prompts are
``skillgrad/prompts/<kind>_system.md`` and ``<kind>_user.md``. Validation and the single re-ask
are ``models.structured.ask_structured``: a reply still invalid comes back with ``error`` set and
is recorded as failed by the caller, never replaced.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal

from skillgrad.models.base import ModelBackend
from skillgrad.models.structured import M, StructuredReply, ask_structured
from skillgrad.prompts import render_prompt

CallKind = Literal[
    "reflect",
    "deep_reflect",
    "revise",
    "contrast",
    "merge",
    "rank",
    "slow_update",
    "meta_skill",
    "adherence",
]


async def ask_optimizer(
    optimizer: ModelBackend,
    kind: CallKind,
    schema: type[M],
    *,
    max_tokens: int,
    temperature: float = 0.0,
    seed: int = 0,
    check: Callable[[M], str | None] | None = None,
    check_temperature: float | None = None,
    system: Mapping[str, object] | None = None,
    **fields: object,
) -> StructuredReply[M]:
    """Render ``<kind>_system`` (with ``system``)/``<kind>_user`` (with ``fields``) and ask for
    ``schema`` (``check``: see ``ask_structured``)."""
    return await ask_structured(
        optimizer,
        render_prompt(f"{kind}_system", **(system or {})),
        render_prompt(f"{kind}_user", **fields),
        schema,
        max_tokens=max_tokens,
        temperature=temperature,
        seed=seed,
        check=check,
        check_temperature=check_temperature,
    )


__all__ = ["CallKind", "ask_optimizer"]
