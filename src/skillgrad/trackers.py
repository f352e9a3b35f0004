"""Experiment trackers as Callbacks: TensorBoard, MLflow and Weights & Biases (offline).

Each is an optional extra and off by default; ``build_trackers(["tensorboard", ...], run_dir)``
builds them, or raises ConfigError naming the ``pip install 'skillgrad[...]'`` to run. They only
observe events (``step_end`` records, ``run_start`` config, ``run_end`` summary).
"""

from __future__ import annotations

import difflib
import hashlib
import importlib.util
import os
import time
from pathlib import Path
from typing import Any

from skillgrad.callbacks import Callback, Control
from skillgrad.errors import ConfigError
from skillgrad.runs.io import flatten
from skillgrad.runs.records import StepRecord
from skillgrad.runs.view import best_skill_file

EXTRAS = {"tensorboard": "tensorboard", "mlflow": "mlflow", "wandb": "wandb"}


def record_scalars(record: StepRecord) -> dict[str, float]:
    """Numeric fields of a StepRecord as scalars (``accepted`` as 0/1, ``candidate_score`` only
    when the gate ran); per-role fields become ``cost/optimizer`` and the like."""
    r = record
    out: dict[str, float] = {
        "lr": r.lr, "k": r.k, "train_score": r.train_score, "n_failures": r.n_failures,
        "n_reflections": r.n_reflections, "n_failed_reflections": r.n_failed_reflections,
        "n_proposed": r.n_proposed, "n_merged": r.n_merged, "n_conflicts": r.n_conflicts,
        "n_selected": r.n_selected, "n_applied": r.n_applied, "accepted": r.accepted,
        "incumbent_score": r.incumbent_score, "gate_evaluated": r.gate_evaluated,
        "gate_total": r.gate_total, "early_rejected": r.early_rejected, "val_score": r.val_score,
        "best_score": r.best_score, "skill_version": r.skill_version,
        "skill_tokens": r.skill_tokens, "candidate_tokens": r.candidate_tokens,
        "no_gate": r.no_gate, "cum_calls": r.cum_calls, "cum_cost": r.cum_cost,
    }  # fmt: skip
    if r.candidate_score is not None:
        out["candidate_score"] = r.candidate_score
    per_role: dict[str, dict[str, float]] = {
        "calls": dict(r.calls), "tokens": dict(r.tokens), "cost": dict(r.cost),
        "timings": dict(r.timings),
    }  # fmt: skip
    for key, values in per_role.items():
        out |= {f"{key}/{sub}": v for sub, v in values.items()}
    return {k: float(v) for k, v in out.items()}


def _step_of(event: dict[str, Any]) -> tuple[int, StepRecord] | None:
    """The record of a ``step_end`` event (events are JSON: parsed here into a StepRecord)."""
    record = event.get("record")
    if event.get("event") != "step_end" or not isinstance(record, dict):
        return None
    parsed = StepRecord.from_json(record)
    return parsed.step, parsed


class TensorBoardCallback:
    """Writes scalars per step and the skill text per step as TensorBoard event files."""

    def __init__(self, log_dir: Path) -> None:
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        self.log_dir = Path(log_dir)
        self._writer = EventFileWriter(str(self.log_dir))

    def _write(self, step: int, values: list[Any]) -> None:
        from tensorboard.compat.proto.event_pb2 import Event
        from tensorboard.compat.proto.summary_pb2 import Summary

        self._writer.add_event(
            Event(wall_time=time.time(), step=step, summary=Summary(value=values))
        )

    @staticmethod
    def _text(tag: str, text: str) -> Any:
        from tensorboard.compat.proto import tensor_pb2, tensor_shape_pb2, types_pb2
        from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata

        tensor = tensor_pb2.TensorProto(
            dtype=types_pb2.DT_STRING,
            string_val=[text.encode("utf-8")],
            tensor_shape=tensor_shape_pb2.TensorShapeProto(
                dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=1)]
            ),
        )
        meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="text"))
        return Summary.Value(tag=tag, metadata=meta, tensor=tensor)

    def on_event(self, event: dict[str, Any], control: Control) -> None:
        from tensorboard.compat.proto.summary_pb2 import Summary

        found = _step_of(event)
        if found is not None:
            step, record = found
            values = [
                Summary.Value(tag=k, simple_value=v) for k, v in record_scalars(record).items()
            ]
            if isinstance(event.get("skill"), str):
                values.append(self._text("skill", event["skill"]))
            self._write(step, values)
            self._writer.flush()
        elif event.get("event") == "run_start" and isinstance(event.get("config"), dict):
            lines = [f"{k} = {v}" for k, v in flatten(event["config"]).items()]
            self._write(0, [self._text("config", "\n\n".join(lines))])
        elif event.get("event") == "run_end":
            self.close()

    def close(self) -> None:
        self._writer.close()


class MLflowCallback:
    """Logs config as params, step scalars as metrics, the summary and best skill at run end.

    ``tracking_uri`` defaults to ``$MLFLOW_TRACKING_URI`` or a local file store in the run dir.
    """

    def __init__(self, run_dir: Path, tracking_uri: str | None = None,
                 experiment: str = "skillgrad") -> None:  # fmt: skip
        from mlflow.tracking import MlflowClient

        self.run_dir = Path(run_dir)
        self.tracking_uri = (
            tracking_uri
            or os.environ.get("MLFLOW_TRACKING_URI")
            or (self.run_dir / "mlruns").resolve().as_uri()
        )
        if self.tracking_uri.startswith("file:") or "://" not in self.tracking_uri:
            # MLflow 3 refuses its file store unless opted in; it is the only offline store
            # that needs no database driver, which is what a local run wants.
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        self.client = MlflowClient(tracking_uri=self.tracking_uri)
        self.experiment = experiment
        self.run_id: str | None = None

    def _previous_run(self, exp_id: str) -> str | None:
        """The MLflow run this run directory logged to before (to continue it on resume)."""
        key = str(self.run_dir.resolve()).replace("'", "")
        found = self.client.search_runs(
            [exp_id], filter_string=f"tags.`skillgrad.run_dir` = '{key}'", max_results=1,
            order_by=["attributes.start_time DESC"],
        )  # fmt: skip
        return found[0].info.run_id if found else None

    def _start(self, event: dict[str, Any]) -> None:
        from mlflow.entities import Param

        exp = self.client.get_experiment_by_name(self.experiment)
        exp_id = exp.experiment_id if exp else self.client.create_experiment(self.experiment)
        config = event.get("config") or {}
        previous = self._previous_run(exp_id) if event.get("resumed") else None
        if previous is not None:
            # A resumed run continues its MLflow run: one curve, not one run per restart.
            self.run_id = previous
            self.client.update_run(previous, "RUNNING")
            self.client.set_tag(previous, "skillgrad.resumed", "True")
            return
        tags = {"skillgrad.resumed": str(bool(event.get("resumed"))),
                "skillgrad.run_dir": str(self.run_dir.resolve()).replace("'", "")}  # fmt: skip
        run = self.client.create_run(exp_id, run_name=str(config.get("run_name", "")), tags=tags)
        self.run_id = run.info.run_id
        params = [Param(k, str(v)[:500]) for k, v in flatten(config).items() if k]
        for i in range(0, len(params), 100):  # MLflow caps a batch at 100 params
            self.client.log_batch(self.run_id, params=params[i : i + 100])

    def on_event(self, event: dict[str, Any], control: Control) -> None:
        from mlflow.entities import Metric

        name = event.get("event")
        if name == "run_start":
            self._start(event)
            return
        if self.run_id is None:
            return
        found = _step_of(event)
        if found is not None:
            step, record = found
            now = int(time.time() * 1000)
            metrics = [Metric(k.replace("/", "."), v, now, step)
                       for k, v in record_scalars(record).items()]  # fmt: skip
            self.client.log_batch(self.run_id, metrics=metrics)
        elif name == "run_end":
            self._end(event.get("summary") or {})

    def _end(self, summary: dict[str, Any]) -> None:
        assert self.run_id is not None
        for key, value in flatten(summary).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                self.client.log_metric(self.run_id, f"final.{key}", float(value))
        best = best_skill_file(self.run_dir)
        if best is not None:
            self.client.log_artifact(self.run_id, str(best))
        self.client.set_terminated(self.run_id, "FINISHED")


class WandbCallback:
    """Logs to Weights & Biases, offline by default (``$WANDB_MODE`` may say otherwise)."""

    def __init__(self, run_dir: Path, project: str = "skillgrad", mode: str | None = None) -> None:
        self.run_dir = Path(run_dir)
        self.project = project
        self.mode = mode or os.environ.get("WANDB_MODE", "offline")
        self.run: Any = None
        digest = hashlib.sha256(str(self.run_dir.resolve()).encode()).hexdigest()[:16]
        self.run_id = f"skillgrad-{digest}"  # stable per run directory

    def on_event(self, event: dict[str, Any], control: Control) -> None:
        import wandb

        name = event.get("event")
        if name == "run_start":
            config = event.get("config") or {}
            self.run = wandb.init(
                project=self.project, mode=self.mode, dir=str(self.run_dir),  # type: ignore[arg-type]
                name=str(config.get("run_name", "")) or None, config=flatten(config),
                id=self.run_id, resume="allow",  # a resumed training run continues this W&B run
                settings=wandb.Settings(silent=True, x_disable_stats=True),
            )  # fmt: skip
            return
        if self.run is None:
            return
        found = _step_of(event)
        if found is not None:
            step, record = found
            self.run.log(record_scalars(record), step=step)
        elif name == "run_end":
            summary = {k: v for k, v in flatten(event.get("summary") or {}).items()
                       if isinstance(v, (int, float, str))}  # fmt: skip
            self.run.summary.update(summary)
            self.run.finish()
            self.run = None


def _require(name: str) -> None:
    if importlib.util.find_spec(EXTRAS[name]) is None:
        raise ConfigError(
            f"tracker {name!r} needs an optional dependency that is not installed; "
            f"run: pip install 'skillgrad[{name}]'"
        )


def build_trackers(names: list[str], run_dir: Path) -> list[Callback]:
    """Tracker callbacks for ``names`` (any of tensorboard, mlflow, wandb) writing under run_dir."""
    out: list[Callback] = []
    for raw in names:
        name = raw.strip().lower()
        if name not in EXTRAS:
            close = difflib.get_close_matches(name, list(EXTRAS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"unknown tracker {raw!r}{hint}; choose from: {', '.join(EXTRAS)}")
        _require(name)
        if name == "tensorboard":
            out.append(TensorBoardCallback(Path(run_dir) / "tensorboard"))
        elif name == "mlflow":
            out.append(MLflowCallback(Path(run_dir)))
        else:
            out.append(WandbCallback(Path(run_dir)))
    return out


__all__ = [
    "MLflowCallback",
    "TensorBoardCallback",
    "WandbCallback",
    "build_trackers",
    "record_scalars",
]
