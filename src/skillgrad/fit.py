"""``skillgrad.fit``: train a skill from Python lists, like ``gepa.optimize`` or DSPy's compile.

    result = skillgrad.fit(trainset, valset, testset, scorer="exact",
                           optimizer="openai:gpt-4o-mini", target="openai:gpt-4o-mini")
    print(result.best_skill)

- Data: lists of ``Item`` or of dicts with the Item fields (``id``, ``input``, ``reference``,
  optional ``meta``). The test split is optional; ids must be unique and splits disjoint.
- ``scorer``: a registered name (``"exact"``), a ``Scorer``, or a plain function
  ``f(output, item)`` returning a bool, a float in [0, 1] or a ``Score``.
- ``optimizer`` / ``target``: ``"provider:model"`` strings (or ``ModelSpec``), backend objects,
  or plain functions of the ``ChatRequest`` (run as ``provider: function``).
- ``**train_options``: any ``train`` config key (``num_epochs=3``, ``batch_size=4`` ...); the
  keys ``budget``, ``hardware`` and ``run_name`` set those config parts.

The run is a normal run directory under ``output_dir`` (default ``runs/``), named ``fit-<digest
of data, models and options>``: calling ``fit`` again with the same arguments resumes it (and
costs nothing for calls already made). ``afit`` is the same inside a running event loop.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillgrad.config import Config, validate_config
from skillgrad.errors import ConfigError, DataError
from skillgrad.models.base import ModelBackend, backend_name
from skillgrad.models.function import as_backend
from skillgrad.models.spec import ModelSpec
from skillgrad.registry import load_scorer
from skillgrad.runs.io import read_json
from skillgrad.runs.layout import RunPaths
from skillgrad.scorers import CallableScorer
from skillgrad.scorers.base import Scorer, ScoresOutputs
from skillgrad.scorers.base import as_scorer as as_base_scorer
from skillgrad.session import arun_training, safe_name
from skillgrad.skill.document import Skill
from skillgrad.tasks.base import Split
from skillgrad.tasks.chat import ChatTask
from skillgrad.types import Item, Score, StepRecord

log = logging.getLogger(__name__)

ItemLike = Item | Mapping[str, Any]
ScorerLike = str | ScoresOutputs | Callable[[str, Item], "bool | float | Score"]
ModelLike = str | ModelSpec | ModelBackend | Callable[..., Any]
_CONFIG_KEYS = ("budget", "hardware", "run_name")


@dataclass(frozen=True)
class FitResult:
    """What ``fit`` returns: the best skill's text, the step history, the summary (as in
    ``summary.json``; ``test_initial``/``test_best`` are None without a test split) and the run
    directory (``best_skill.md``, ``report.md``, ``history.json`` ...)."""

    best_skill: str
    history: list[StepRecord]
    summary: dict[str, Any]
    run_dir: Path


class ItemsTask(ChatTask):
    """A single-turn task over in-memory splits: the prompt is the item's input (text as is,
    anything else as JSON); the scorer grades the output (its abilities declared by ``Scorer``)."""

    def __init__(
        self,
        splits: dict[Split, list[Item]],
        scorer: Scorer,
        name: str = "fit",
        max_tokens: int = 256,
    ) -> None:
        self.splits, self.scorer, self.name, self.max_tokens = splits, scorer, name, max_tokens
        self.deterministic = scorer.deterministic

    def load_split(self, split: Split) -> list[Item]:
        return list(self.splits.get(split, []))

    def prompt(self, item: Item) -> str:
        value = item.input
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

    def score(self, output: str, item: Item) -> Score:
        return self.scorer.score(output, item)

    async def ascore(self, output: str, item: Item) -> Score:
        return await self.scorer.ascore(output, item)

    def bind_judge(self, backend: ModelBackend) -> None:
        """Give a model-graded scorer (``llm_judge``) the run's optimizer."""
        self.scorer.bind(backend)


def as_items(rows: Sequence[ItemLike] | None, split: str) -> list[Item]:
    """``Item``s as they are; dicts with ``id``, ``input``, ``reference`` (optional ``meta``)."""
    out: list[Item] = []
    for n, row in enumerate(rows or []):
        if isinstance(row, Item):
            out.append(row)
            continue
        if not isinstance(row, Mapping):
            raise DataError(
                f"{split}set[{n}]: expected an Item or a dict with id/input/reference, "
                f"got {type(row).__name__}"
            )
        unknown = sorted(set(row) - {"id", "input", "reference", "meta"})
        missing = [k for k in ("id", "input") if k not in row]
        if unknown or missing:
            what = f"unknown keys {unknown}" if unknown else f"missing {missing}"
            raise DataError(
                f"{split}set[{n}]: {what}; an item is a dict with id, input, reference and "
                "optional meta"
            )
        out.append(
            Item(
                id=str(row["id"]),
                input=row["input"],
                reference=row.get("reference"),
                meta=dict(row.get("meta") or {}),
            )
        )
    return out


def as_scorer(scorer: ScorerLike) -> Scorer:
    """A registered name, a Scorer, or a function ``f(output, item)`` (bool | float | Score)."""
    if isinstance(scorer, str):
        return load_scorer(scorer)
    if isinstance(scorer, ScoresOutputs):
        return as_base_scorer(scorer)
    if callable(scorer):
        return CallableScorer(scorer)
    raise ConfigError(
        f"scorer: expected a name, a Scorer or a function f(output, item), got {scorer!r}"
    )


def _model(value: ModelLike, role: str) -> tuple[ModelSpec, ModelBackend | None]:
    """(the spec recorded in the config, the backend to use instead, if any)."""
    if isinstance(value, str | ModelSpec):
        return ModelSpec.parse(value), None
    if hasattr(value, "complete") or callable(value):
        label = getattr(value, "__qualname__", None) or type(value).__name__
        backend = as_backend(value, str(getattr(value, "name", None) or f"function:{label}"))
        return ModelSpec(provider="function", model=safe_name(backend_name(backend))), backend
    raise ConfigError(
        f"{role}: expected 'provider:model', a backend or a function of the request, got {value!r}"
    )


def _config(
    optimizer: ModelSpec,
    target: ModelSpec,
    output_dir: str | Path | None,
    options: dict[str, Any],
) -> Config:
    train = {k: v for k, v in options.items() if k not in _CONFIG_KEYS}
    raw: dict[str, Any] = {
        "train": train,
        "models": {"optimizer": optimizer.model_dump(), "target": target.model_dump()},
        "env": {"task": "fit", "output_root": str(Path(output_dir or "runs").resolve())},
        "base_dir": str(Path.cwd()),
    }
    for key in ("budget", "hardware"):
        if key in options:
            raw[key] = options[key]
    if options.get("run_name"):
        raw["env"]["run_name"] = safe_name(str(options["run_name"]))
    return validate_config(raw, source="skillgrad.fit(...)")


def _digest(cfg: Config, splits: dict[Split, list[Item]], skill: str, scorer: Scorer) -> str:
    h = hashlib.sha256()
    h.update(json.dumps(cfg.train.model_dump(mode="json"), sort_keys=True).encode())
    h.update(json.dumps(cfg.models.model_dump(mode="json"), sort_keys=True).encode())
    h.update(skill.encode() + _scorer_identity(scorer).encode())
    for split, items in sorted(splits.items()):
        for i in items:
            row = [split, i.id, i.input, i.reference, i.meta]
            h.update(json.dumps(row, sort_keys=True, default=str).encode())
    return h.hexdigest()[:10]


def _scorer_identity(scorer: Scorer) -> str:
    """Class, name and (for a function scorer) the function's source: a changed scorer is a new
    run, never a resume that replays scores cached under the old one."""
    parts = [type(scorer).__qualname__, str(scorer.name)]
    fn = getattr(scorer, "function", None)  # CallableScorer's user function
    if fn is not None:
        try:
            parts.append(inspect.getsource(fn))
        except (OSError, TypeError):
            parts.append(repr(fn))
    return "|".join(parts)


async def afit(
    trainset: Sequence[ItemLike],
    valset: Sequence[ItemLike],
    testset: Sequence[ItemLike] | None = None,
    *,
    scorer: ScorerLike,
    optimizer: ModelLike,
    target: ModelLike,
    skill: str = "",
    output_dir: str | Path | None = None,
    **train_options: Any,
) -> FitResult:
    """``fit`` inside a running event loop (Jupyter, an async application)."""
    splits: dict[Split, list[Item]] = {
        "train": as_items(trainset, "train"),
        "val": as_items(valset, "val"),
        "test": as_items(testset, "test"),
    }
    the_scorer = as_scorer(scorer)
    opt_spec, opt_backend = _model(optimizer, "optimizer")
    tgt_spec, tgt_backend = _model(target, "target")
    cfg = _config(opt_spec, tgt_spec, output_dir, train_options)
    if not cfg.env.run_name:
        name = f"fit-{_digest(cfg, splits, skill, the_scorer)}"
        cfg = cfg.model_copy(update={"env": cfg.env.model_copy(update={"run_name": name})})
    run_dir = Path(cfg.env.output_root) / str(cfg.env.run_name)
    log.info("fit: %d train / %d val / %d test items -> %s", *map(len, splits.values()), run_dir)
    result = await arun_training(
        cfg,
        run_dir=run_dir,
        task=ItemsTask(splits, the_scorer),
        optimizer=opt_backend,
        target=tgt_backend,
        skill=skill,
        require_test=False,
    )
    paths = RunPaths(result.run_dir)
    history = read_json(paths.history) or []
    return FitResult(
        best_skill=Skill.load(paths.best_skill).text,
        history=[StepRecord.from_json(r) for r in history],
        summary=result.summary,
        run_dir=result.run_dir,
    )


def fit(
    trainset: Sequence[ItemLike],
    valset: Sequence[ItemLike],
    testset: Sequence[ItemLike] | None = None,
    *,
    scorer: ScorerLike,
    optimizer: ModelLike,
    target: ModelLike,
    skill: str = "",
    output_dir: str | Path | None = None,
    **train_options: Any,
) -> FitResult:
    """Train a skill on ``trainset``, selecting on ``valset``, testing on ``testset`` (optional).
    In a running event loop (Jupyter) use ``await skillgrad.afit(...)``."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise ConfigError(
            "skillgrad.fit() was called inside a running event loop (Jupyter, async code): "
            "use `await skillgrad.afit(...)` there"
        )
    return asyncio.run(
        afit(
            trainset,
            valset,
            testset,
            scorer=scorer,
            optimizer=optimizer,
            target=target,
            skill=skill,
            output_dir=output_dir,
            **train_options,
        )
    )


__all__ = ["FitResult", "ItemsTask", "afit", "as_items", "as_scorer", "fit"]
