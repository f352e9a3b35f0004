"""Tracker callbacks write to local stores; each test reads the values back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from skillgrad.callbacks import Control
from skillgrad.errors import ConfigError
from skillgrad.runs.io import read_jsonl
from skillgrad.runs.records import StepRecord
from skillgrad.trackers import (
    MLflowCallback,
    TensorBoardCallback,
    WandbCallback,
    build_trackers,
    record_scalars,
)


def _events(run_dir: Path) -> list[dict[str, Any]]:
    """The events of a realistic run, fed to the callbacks directly (no training loop)."""
    return read_jsonl(run_dir / "events.jsonl")


def _feed(cb: Any, events: list[dict[str, Any]]) -> None:
    control = Control()
    for ev in events:
        cb.on_event(ev, control)
    assert not control.stop_requested


def test_record_scalars() -> None:
    rec = StepRecord.from_json(
        {"step": 3, "epoch": 1, "kind": "step", "accepted": True, "val_score": 0.5,
         "cost": {"optimizer": 0.1, "target": 0.2}, "timings": {"gate": 1.5}}
    )  # fmt: skip
    scalars = record_scalars(rec)
    assert {k: scalars[k] for k in ("accepted", "val_score", "cost/optimizer", "timings/gate")} == {
        "accepted": 1.0, "val_score": 0.5, "cost/optimizer": 0.1, "timings/gate": 1.5,
    }  # fmt: skip
    assert "step" not in scalars and "candidate_score" not in scalars  # step is the x axis
    assert all(isinstance(v, float) for v in scalars.values())


def test_tensorboard_scalars_and_skill_text(run_dir: Path, tmp_path: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    cb = TensorBoardCallback(tmp_path / "tb")
    _feed(cb, [*_events(run_dir), {"event": "unknown_future_event"}])
    acc = EventAccumulator(str(tmp_path / "tb"))
    acc.Reload()
    vals = [(e.step, round(e.value, 3)) for e in acc.Scalars("val_score")]
    assert vals == [(1, 0.5), (2, 0.5), (3, 0.667), (4, 0.833), (5, 0.833), (6, 1.0), (7, 0.833)]
    assert [e.value for e in acc.Scalars("accepted")] == [1, 0, 1, 1, 0, 1, 1]
    assert acc.Scalars("cost/optimizer")[0].value == pytest.approx(0.002)
    skills = acc.Tensors("skill")
    assert len(skills) == 7
    assert "UPPER CASE" in skills[-1].tensor_proto.string_val[0].decode()
    assert "optimizer.lr = 2.0" in acc.Tensors("config")[0].tensor_proto.string_val[0].decode()


def test_mlflow_local_file_store(run_dir: Path, tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    uri = (tmp_path / "mlruns").as_uri()
    cb = MLflowCallback(run_dir, tracking_uri=uri, experiment="tests")
    _feed(cb, _events(run_dir))
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("tests")
    assert exp is not None
    (run,) = client.search_runs([exp.experiment_id])
    assert run.info.run_name == "demo" and run.info.status == "FINISHED"
    assert run.data.params["optimizer.lr"] == "2.0"
    assert run.data.params["env.api_key"] == "***"  # config arrives redacted; passed as is
    hist = client.get_metric_history(run.info.run_id, "val_score")
    assert sorted((m.step, round(m.value, 3)) for m in hist)[-2:] == [(6, 1.0), (7, 0.833)]
    assert run.data.metrics["final.test_best"] == pytest.approx(0.833)
    assert run.data.metrics["cost.optimizer"] == pytest.approx(0.002)
    (artifact,) = client.list_artifacts(run.info.run_id)
    assert artifact.path == "best_skill.md"
    local = client.download_artifacts(run.info.run_id, "best_skill.md", str(tmp_path))
    assert Path(local).read_text() == (run_dir / "best_skill.md").read_text()


def test_mlflow_resumed_run_continues_the_same_mlflow_run(run_dir: Path, tmp_path: Path) -> None:
    from mlflow.tracking import MlflowClient

    uri = (tmp_path / "mlruns").as_uri()
    events = _events(run_dir)
    cut = next(i for i, e in enumerate(events) if e.get("record", {}).get("step") == 3) + 1
    _feed(MLflowCallback(run_dir, tracking_uri=uri), events[:cut])  # killed after step 3
    resumed = [dict(events[0], resumed=True), *events[cut:]]
    _feed(MLflowCallback(run_dir, tracking_uri=uri), resumed)
    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("skillgrad")
    assert exp is not None
    (run,) = client.search_runs([exp.experiment_id])
    assert run.info.status == "FINISHED" and run.data.tags["skillgrad.resumed"] == "True"
    steps = sorted(m.step for m in client.get_metric_history(run.info.run_id, "val_score"))
    assert steps == [1, 2, 3, 4, 5, 6, 7]
    # a different run directory gets its own MLflow run even when marked resumed
    other = run_dir.parent / "other"
    other.mkdir()
    _feed(MLflowCallback(other, tracking_uri=uri), [dict(events[0], resumed=True)])
    assert len(client.search_runs([exp.experiment_id])) == 2


def _wandb_records(path: Path) -> list[Any]:
    """Decode a W&B offline ``.wandb`` file (LevelDB-log framing of protobuf Records)."""
    from wandb.proto import wandb_internal_pb2 as pb

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    pos, buf, out = 7, b"", []
    while pos + 7 <= len(data):
        left = 32768 - pos % 32768
        if left < 7:  # block trailer padding
            pos += left
            continue
        length, kind = int.from_bytes(data[pos + 4 : pos + 6], "little"), data[pos + 6]
        buf += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # FULL or LAST chunk of a record
            rec = pb.Record()
            rec.ParseFromString(buf)
            out.append(rec)
            buf = b""
    return out


def test_wandb_offline(run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.delenv("WANDB_MODE", raising=False)
    cb = WandbCallback(tmp_path / "wb")
    (tmp_path / "wb").mkdir()
    _feed(cb, _events(run_dir))
    import wandb

    wandb.teardown()  # wait for the wandb service to flush the offline file and exit
    (path,) = (tmp_path / "wb").glob("wandb/offline-run-*/run-*.wandb")
    history, last_row = [], {}
    for rec in _wandb_records(path):
        if rec.WhichOneof("record_type") == "history":
            row = {i.key or "/".join(i.nested_key): json.loads(i.value_json)
                   for i in rec.history.item}  # fmt: skip
            history.append((row["_step"], round(row["val_score"], 3)))
            last_row = row
    assert history == [(1, 0.5), (2, 0.5), (3, 0.667), (4, 0.833), (5, 0.833), (6, 1.0),
                       (7, 0.833)]  # fmt: skip
    assert last_row["cost/optimizer"] == pytest.approx(0.002) and last_row["accepted"] == 1
    assert cb.run is None  # finished at run_end
    assert path.name == f"run-{cb.run_id}.wandb"  # a stable id: a resumed run continues it
    assert WandbCallback(tmp_path / "wb").run_id == cb.run_id


def test_build_trackers(tmp_path: Path) -> None:
    cbs = build_trackers(["tensorboard", "MLflow"], tmp_path)
    assert [type(c).__name__ for c in cbs] == ["TensorBoardCallback", "MLflowCallback"]
    assert isinstance(cbs[0], TensorBoardCallback)
    cbs[0].close()
    with pytest.raises(ConfigError, match="did you mean 'wandb'"):
        build_trackers(["wandbb"], tmp_path)
    assert build_trackers([], tmp_path) == []
