"""The sweep plan: grid parsing, run names, seeds and the data seed, and refusing another sweep."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sweep_helpers import write_config

from skillgrad import load_config
from skillgrad.errors import ConfigError, RunDirError
from skillgrad.registry import load_task
from skillgrad.runs.io import atomic_write_json, read_json
from skillgrad.sweep.plan import (
    PLAN_FILE,
    build_plan,
    check_or_write_plan,
    parse_grid,
    run_name,
    split_values,
)


def test_grid_values_are_yaml_scalars() -> None:
    (lr, sched) = parse_grid(["train.learning_rate=2,4.5", "train.lr_scheduler=constant,cosine"])
    assert lr.key == "train.learning_rate" and lr.values == (2, 4.5)
    assert sched.values == ("constant", "cosine")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("train.seed=1,2", "use --seeds"),
        ("env.output_root=a,b", "use --out"),
        ("train.batch_size", "expected KEY=V1,V2"),
        ("train.batch_size=", "expected KEY=V1,V2"),
        ("train.batch_size=4,4", "listed twice"),
    ],
)
def test_bad_grid_is_refused_with_the_reason(spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_grid([spec])


def test_a_key_given_twice_is_refused() -> None:
    with pytest.raises(ConfigError, match="two --grid options"):
        parse_grid(["train.batch_size=2,4", "train.batch_size=8"])


def test_run_names_are_path_safe_and_unique() -> None:
    names = {
        run_name(i, 2, {"env.options.prompt": v, "train.lr_scheduler": "cosine"}, s)
        for i, v in enumerate(["a/b c", "../x", "ünï"])
        for s in (0, 1)
    }
    assert len(names) == 6
    assert all(re.fullmatch(r"[A-Za-z0-9._+-]+", n) and ".." not in n for n in names)
    assert run_name(0, 1, {}, 3) == "seed3"


def test_plan_is_grid_times_seeds_and_seed_zero_is_the_plain_run(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    plan = build_plan(
        config, seeds=3, grid=["train.lr_scheduler=constant,cosine", "train.batch_size=2,4"],
        sets=["train.seed=10"], out=tmp_path / "sw",
    )  # fmt: skip
    assert len(plan.jobs) == 12 and len({j.name for j in plan.jobs}) == 12
    assert plan.seeds == (10, 11, 12)
    # seed by seed: a sweep stopped early has every configuration of the seeds it finished
    assert [j.seed for j in plan.jobs] == [10] * 4 + [11] * 4 + [12] * 4
    assert len(plan.configs()) == 4
    for job in plan.jobs:
        cfg = load_config(job.config_path, list(job.overrides))
        assert cfg.train.seed == job.seed
        assert cfg.train.lr_scheduler == job.params["train.lr_scheduler"]
        assert cfg.train.batch_size == job.params["train.batch_size"]
        assert "seed" not in cfg.env.options  # the data split stays fixed
        assert Path(job.run_dir).parent == tmp_path / "sw"


def test_ablate_is_the_base_config_and_one_change_at_a_time(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    plan = build_plan(
        config, seeds=2, ablate=["train.lr_scheduler=constant", "train.batch_size=2,8"],
        out=tmp_path / "sw",
    )  # fmt: skip
    assert plan.configs() == [
        {}, {"train.lr_scheduler": "constant"}, {"train.batch_size": 2}, {"train.batch_size": 8}
    ]  # fmt: skip
    assert [j.seed for j in plan.jobs] == [0] * 4 + [1] * 4
    base = load_config(config)
    for job in plan.jobs:
        cfg = load_config(job.config_path, list(job.overrides))
        changed = {
            "train.lr_scheduler": cfg.train.lr_scheduler != base.train.lr_scheduler,
            "train.batch_size": cfg.train.batch_size != base.train.batch_size,
        }
        assert {k for k, v in changed.items() if v} == set(job.params)  # one key, or none
    assert plan.identity()["ablate"] == [
        {"key": "train.lr_scheduler", "values": ["constant"]},
        {"key": "train.batch_size", "values": [2, 8]},
    ]


def test_on_and_off_stay_the_words_a_switch_takes(tmp_path: Path) -> None:
    """YAML 1.1 reads a bare ``off`` as false; an arm is named by the word typed
    (``explore-off``), and a boolean setting still takes it."""
    plan = build_plan(
        write_config(tmp_path), seeds=1, out=tmp_path / "sw",
        ablate=["train.examples=off", "train.line_screens=off", "train.use_meta_skill=Off"],
    )  # fmt: skip
    assert plan.configs()[1:] == [
        {"train.examples": "off"}, {"train.line_screens": "off"}, {"train.use_meta_skill": "off"}
    ]  # fmt: skip
    assert [j.name for j in plan.jobs][1:3] == [
        "c1_examples-off_seed0",
        "c2_line_screens-off_seed0",
    ]
    configs = [load_config(j.config_path, list(j.overrides)).train for j in plan.jobs]
    assert configs[1].examples == "off" and configs[2].line_screens is False
    assert configs[3].use_meta_skill is False


@pytest.mark.parametrize(
    ("grid", "ablate", "message"),
    [
        (["train.batch_size=2,4"], ["train.lr_scheduler=constant"], "not both"),
        ([], ["train.lr_scheduler=cosine"], "that is the base config's value already"),
        ([], ["train.seed=3"], "--ablate 'train.seed=3': train.seed is set by the sweep"),
        ([], ["train.lr_scheduler=bogus"], "sweep run c1_lr_scheduler-bogus_seed0"),
    ],
)
def test_a_bad_ablation_is_refused_before_anything_runs(
    tmp_path: Path, grid: list[str], ablate: list[str], message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        build_plan(write_config(tmp_path), seeds=1, grid=grid, ablate=ablate, out=tmp_path / "sw")
    assert not (tmp_path / "sw").exists()


def test_a_sweep_planned_before_ablate_existed_still_resumes(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    out = tmp_path / "sw"
    plan = build_plan(config, seeds=1, grid=["train.lr_scheduler=constant,cosine"], out=out)
    assert check_or_write_plan(plan) is False
    record = read_json(out / PLAN_FILE)
    del record["ablate"]  # as such a sweep.json was written
    atomic_write_json(out / PLAN_FILE, record)
    again = build_plan(config, seeds=1, grid=["train.lr_scheduler=constant,cosine"], out=out)
    assert check_or_write_plan(again) is True
    other = build_plan(config, seeds=1, ablate=["train.lr_scheduler=constant"], out=out)
    with pytest.raises(RunDirError, match="holds a different sweep"):
        check_or_write_plan(other)


def test_vary_split_varies_the_task_data_seed(tmp_path: Path) -> None:
    plan = build_plan(write_config(tmp_path), seeds=2, out=tmp_path / "sw", vary_split=True)
    splits = []
    for job in plan.jobs:
        cfg = load_config(job.config_path, list(job.overrides))
        assert cfg.env.options["seed"] == job.seed
        task = load_task(cfg.env.task, dict(cfg.env.options), Path(cfg.base_dir))
        splits.append([i.input for i in task.load_split("val")])
    assert splits[0] != splits[1]


def test_a_bad_grid_value_fails_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"sweep run c1_lr_scheduler-bogus_seed0"):
        build_plan(
            write_config(tmp_path), seeds=1, grid=["train.lr_scheduler=cosine,bogus"],
            out=tmp_path / "sw",
        )  # fmt: skip
    assert not (tmp_path / "sw").exists()


def test_same_plan_resumes_a_different_one_is_refused(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    out = tmp_path / "sw"
    grid = ["train.lr_scheduler=constant,cosine"]
    first = build_plan(config, seeds=2, grid=grid, out=out)
    assert check_or_write_plan(first) is False
    again = build_plan(config, seeds=2, grid=grid, out=out, sets=["budget.max_calls=99"])
    assert again.sweep_id == first.sweep_id
    assert check_or_write_plan(again) is True  # limits may change between invocations
    for changed in (
        build_plan(config, seeds=1, grid=grid, out=out),  # fewer seeds would drop finished runs
        build_plan(config, seeds=3, grid=grid, out=out, sets=["train.seed=1"]),
        build_plan(config, seeds=2, grid=["train.lr_scheduler=constant"], out=out),
        build_plan(config, seeds=2, grid=grid, out=out, sets=["train.batch_size=2"]),
        build_plan(config, seeds=2, grid=grid, out=out, vary_split=True),
    ):
        with pytest.raises(RunDirError, match="holds a different sweep"):
            check_or_write_plan(changed)


def test_more_seeds_extend_the_sweep_in_place(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    out = tmp_path / "sw"
    grid = ["train.lr_scheduler=constant,cosine"]
    first = build_plan(config, seeds=2, grid=grid, out=out, vary_split=True)
    check_or_write_plan(first)
    more = build_plan(config, seeds=4, grid=grid, out=out, vary_split=True)
    assert check_or_write_plan(more) is True
    record = read_json(out / PLAN_FILE)
    assert record["seeds"] == [0, 1, 2, 3] and record["sweep_id"] == first.sweep_id
    kept = {j.name: j.overrides for j in first.jobs}
    now = {j["name"]: tuple(j["overrides"]) for j in record["jobs"]}
    assert len(now) == 8 and all(now[name] == o for name, o in kept.items())
    # the extended record is the one a later resume, or a smaller extension, is checked against
    assert check_or_write_plan(build_plan(config, seeds=4, grid=grid, out=out, vary_split=True))
    with pytest.raises(RunDirError, match="holds a different sweep"):
        check_or_write_plan(build_plan(config, seeds=3, grid=grid, out=out, vary_split=True))
    with pytest.raises(RunDirError, match="holds a different sweep"):  # more seeds, other data
        check_or_write_plan(build_plan(config, seeds=5, grid=grid, out=out))


def test_grid_values_may_be_lists_holding_commas() -> None:
    (axis,) = parse_grid(["train.check_targets=[],[llamacpp:smollm2-135m, x:y],['a,b']"])
    assert axis.values == ([], ["llamacpp:smollm2-135m", "x:y"], ["a,b"])
    assert split_values("a,{b: 1, c: 2},'d,e'") == ["a", "{b: 1, c: 2}", "'d,e'"]
    assert split_values("2,4.5") == ["2", "4.5"]


def test_a_sweep_from_before_a_setting_existed_resumes_while_it_is_default(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path)
    out = tmp_path / "sw"
    assert check_or_write_plan(build_plan(config, seeds=2, out=out)) is False
    record = read_json(out / PLAN_FILE)
    for key in ("check_targets", "check_targets_tolerance", "reask_temperature"):
        del record["config"]["train"][key]  # as written by a version without them
    # and a setting a later version retired, at its neutral value (docs: config.RETIRED)
    record["config"]["train"]["candidates_per_step"] = 1
    atomic_write_json(out / PLAN_FILE, record)
    assert check_or_write_plan(build_plan(config, seeds=2, out=out)) is True
    changed = build_plan(config, seeds=2, out=out, sets=["train.reask_temperature=1.0"])
    with pytest.raises(RunDirError, match=re.escape("train.reask_temperature: None -> 1.0")):
        check_or_write_plan(changed)
    record = read_json(out / PLAN_FILE)
    record["config"]["train"]["candidates_per_step"] = 3  # not what this version does
    atomic_write_json(out / PLAN_FILE, record)
    with pytest.raises(RunDirError, match=re.escape("train.candidates_per_step: 3 -> None")):
        check_or_write_plan(build_plan(config, seeds=2, out=out))


@pytest.mark.parametrize("recorded", ["strict", None])
def test_a_sweep_begun_under_the_former_gate_default_keeps_it_in_every_run(
    tmp_path: Path, recorded: str | None
) -> None:
    """A sweep recorded under ``strict`` (or before ``train.gate_rule`` existed) resumes by a
    config leaving the rule unset: every run, started or not, keeps ``strict``."""
    config = write_config(tmp_path)
    out = tmp_path / "sw"
    assert check_or_write_plan(build_plan(config, seeds=2, out=out)) is False
    record = read_json(out / PLAN_FILE)
    assert record["config"]["train"]["gate_rule"] == "paired"  # a new sweep: the default
    if recorded is None:
        del record["config"]["train"]["gate_rule"]
    else:
        record["config"]["train"]["gate_rule"] = recorded
    atomic_write_json(out / PLAN_FILE, record)
    resumed = build_plan(config, seeds=2, out=out)
    assert check_or_write_plan(resumed) is True
    assert {c.train.gate_rule for c in resumed.run_configs.values()} == {"strict"}
    # as a worker loads each run: its config path and overrides
    workers = {load_config(j.config_path, list(j.overrides)).train.gate_rule for j in resumed.jobs}
    assert workers == {"strict"}
    # a rule the command names is a changed sweep, as before
    named = build_plan(config, seeds=2, out=out, sets=["train.gate_rule=paired"])
    with pytest.raises(RunDirError, match=re.escape(f"train.gate_rule: {recorded!r} -> 'paired'")):
        check_or_write_plan(named)


def test_a_folder_that_is_not_a_sweep_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "busy"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(RunDirError, match="not a sweep directory"):
        check_or_write_plan(build_plan(write_config(tmp_path), seeds=1, out=out))


def test_the_driver_resolves_each_run_config_once(tmp_path: Path) -> None:
    """The plan keeps every job's resolved config: checking the models and choosing a Ray task's
    CPUs read that copy, not the file again (here broken after planning)."""
    from skillgrad.sweep.pool import rollouts_on_ray
    from skillgrad.sweep.run import check_plan_models

    config = write_config(tmp_path)
    plan = build_plan(config, seeds=2, grid=["train.batch_size=2,4"], out=tmp_path / "sw")
    resolved = [load_config(job.config_path, list(job.overrides)) for job in plan.jobs]
    config.write_text("train: {num_epochs: -1}\n", encoding="utf-8")
    check_plan_models(plan)  # read again, the broken file would be a ConfigError here
    assert [plan.run_config(job) for job in plan.jobs] == resolved
    assert not any(rollouts_on_ray(job, plan.run_config(job)) for job in plan.jobs)
