"""The ``skillgrad`` command line: a thin Typer layer over library functions.

skillgrad [-v | --quiet] [--version]
skillgrad train CONFIG [--set section.key=value ...] [--fresh] [--no-gate] [--no-headroom-check]
skillgrad eval CONFIG --skill FILE --split val|test [--min-score X]
skillgrad config [CONFIG] [--schema | --markdown]
skillgrad report RUN_DIR [--html]
skillgrad diff | blame | compare | dashboard   (see cli/views.py)
skillgrad data list | pull NAME [--force]      (see cli/data.py)
skillgrad models list | pull NAME...           (see cli/models.py)
skillgrad transfer SWEEP_DIR --target_model P:M  (see cli/transfer.py)
skillgrad export RUN_DIR --to FORMAT [--dest DIR]  (see cli/export.py)

Output goes through the ``skillgrad`` logger (``console.setup_logging``): ``-v`` shows debug
lines, ``--quiet`` only warnings and errors. Help texts are plain text (no markup).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from skillgrad.cli.console import err, exits, fail, missing_extra, out, print_error, setup_logging
from skillgrad.config import Config, load_config
from skillgrad.errors import SkillgradError
from skillgrad.plugins import load_plugin, plugin_names
from skillgrad.runs.layout import RunPaths

COMMAND_GROUP = "skillgrad.commands"

app = typer.Typer(
    help="Train agent skill documents the way deep-learning frameworks train weights.",
    no_args_is_help=True,
    add_completion=True,
    rich_markup_mode=None,  # plain help: docstrings and brackets are never markup
    pretty_exceptions_enable=False,
)
SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set", metavar="SECTION.KEY=VALUE", help="Override a config value (repeatable)."
    ),
]
OptModel = Annotated[
    str | None,
    typer.Option(
        "--optimizer_model", "--optimizer-model", metavar="PROVIDER:MODEL", help="Optimizer model."
    ),
]
TgtModel = Annotated[
    str | None,
    typer.Option(
        "--target_model", "--target-model", metavar="PROVIDER:MODEL", help="Target model."
    ),
]


def _version(value: bool) -> None:
    if value:
        from skillgrad import __version__

        out.print(f"skillgrad {__version__}", markup=False)
        raise typer.Exit(0)


@app.callback()
def main_options(
    verbose: Annotated[bool, typer.Option("-v", "--verbose", help="Show debug messages.")] = False,
    quiet: Annotated[bool, typer.Option("-q", "--quiet", help="Only warnings and errors.")] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Train agent skill documents the way deep-learning frameworks train weights."""
    setup_logging(err, -1 if quiet else int(verbose))


def _print_markdown(text: str) -> None:
    """A Markdown report as formatted terminal text (Rich Markdown: brackets stay literal),
    word-wrapped at the console's width (80 columns when not a terminal), never cropped."""
    from rich.markdown import Markdown

    out.print(Markdown(text), soft_wrap=False)


def _config(path: Path | None, sets: list[str] | None, opt: str | None, tgt: str | None) -> Config:
    overrides = list(sets or [])
    if opt:
        overrides.append(f"models.optimizer={json.dumps(opt)}")
    if tgt:
        overrides.append(f"models.target={json.dumps(tgt)}")
    return load_config(path, overrides)


@app.command()
@exits()
def train(
    config: Annotated[Path, typer.Argument(help="YAML config file.")],
    set_: SetOpt = None,
    optimizer_model: OptModel = None,
    target_model: TgtModel = None,
    fresh: Annotated[bool, typer.Option(help="Start over in a new run directory.")] = False,
    no_gate: Annotated[
        bool, typer.Option("--no-gate", help="Apply edits without the validation gate (logged).")
    ] = False,
    no_headroom_check: Annotated[
        bool,
        typer.Option(
            "--no-headroom-check",
            help="Train even when the val split is saturated or no gain can pass the gate.",
        ),
    ] = False,
    quiet: Annotated[bool, typer.Option(help="No progress bars, only warnings.")] = False,
) -> None:
    """Train a skill; re-running the same command on an existing run resumes it (a finished
    run continues when re-run with more epochs: --set train.num_epochs=N)."""
    from skillgrad.cli.console import RichProgress
    from skillgrad.session import run_training

    if quiet:
        setup_logging(err, -1)
    sets = [*(set_ or []), *(["train.gate=false"] if no_gate else [])]
    sets += ["train.headroom_check=false"] if no_headroom_check else []
    cfg = _config(config, sets, optimizer_model, target_model)
    progress = RichProgress(err)
    with progress:
        result = run_training(
            cfg, config_path=str(config), fresh=fresh, progress=None if quiet else progress
        )
    paths = RunPaths(result.run_dir)
    _print_markdown(paths.report.read_text(encoding="utf-8"))
    out.print(f"best skill: {paths.best_skill}", markup=False)


@app.command("eval")
@exits()
def eval_(
    config: Annotated[Path, typer.Argument(help="YAML config file (task, target model).")],
    skill: Annotated[
        Path,
        typer.Option(help="Skill file or package folder (e.g. <run>/best_skill: recorded there)."),
    ],
    split: Annotated[str, typer.Option(help="val or test")] = "test",
    baseline: Annotated[
        Path | None,
        typer.Option(
            help="Another skill scored on the same items (e.g. an empty file): prints the "
            "paired difference, its 95% interval and the sign-flip p."
        ),
    ] = None,
    set_: SetOpt = None,
    target_model: TgtModel = None,
    output: Annotated[Path | None, typer.Option("--out", help="Write results JSON here.")] = None,
    min_score: Annotated[
        float | None,
        typer.Option("--min-score", help="Exit 1 when the mean score is below this (for CI)."),
    ] = None,
    repeat: Annotated[
        int,
        typer.Option(
            "--repeat",
            min=1,
            max=32,
            help="Score the skill N times on the split: per-item flip rate and the implied "
            "minimum detectable effect (the noise floor; train.noise_calls: cached or fresh).",
        ),
    ] = 1,
    headroom: Annotated[
        bool,
        typer.Option(
            "--headroom",
            help="Report the skill's headroom on the split (score, items at ceiling and floor, "
            "noise floor, whether the gate can accept any gain); exit 2 when there is none.",
        ),
    ] = False,
    rules_alone: Annotated[
        bool,
        typer.Option(
            "--rules-alone",
            help="Score the skill with its worked examples cut (every Examples section; a "
            "package: in its SKILL.md): what its rules carry without a demonstration to copy. "
            "--baseline is scored as given.",
        ),
    ] = False,
) -> None:
    """Zero-shot evaluation of any skill on a split (no training)."""
    from skillgrad.runs.io import atomic_write_json

    if split not in ("val", "test", "train"):
        raise fail(ValueError(f"--split must be val or test, got {split!r}"))
    cfg = _config(config, set_, None, target_model)
    result, trust = asyncio.run(
        _evaluate(cfg, skill, split, baseline, repeat, headroom, rules_alone)
    )
    if output:
        from skillgrad.runs.provenance import code_provenance

        result["code"] = code_provenance().to_json()  # which code produced these numbers
        try:
            atomic_write_json(output, result)  # redacted and private, as every run file
        except OSError as exc:
            raise fail(SkillgradError(f"--out {output}: cannot write it ({exc})")) from None
    if headroom and not trust["headroom"]["ok"]:
        raise typer.Exit(2)
    if min_score is not None and result["mean_score"] < min_score:
        print_error(
            SkillgradError(
                f"mean score {result['mean_score']:.4f} is below --min-score {min_score}"
            )
        )
        raise typer.Exit(1)


async def _evaluate(
    cfg: Config,
    skill: Path,
    split: str,
    baseline: Path | None,
    repeat: int,
    headroom: bool,
    rules_alone: bool,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``eval`` in one session: the skill (its rules alone with ``rules_alone``), the
    ``--baseline`` and the ``--repeat/--headroom`` passes (nothing without them), each printed
    once scored; the result (with the trust numbers for --out) and the trust numbers."""
    from skillgrad.evaluate import eval_session, noise_and_headroom, paired_comparison, score_skill
    from skillgrad.skill.document import Skill
    from skillgrad.train.examples import without_examples

    loaded, label = Skill.load(skill), None
    if rules_alone:
        cut = without_examples(loaded)
        if cut.hash == loaded.hash:
            out.print(
                f"{skill} holds no Examples section: its rules alone are the skill itself",
                markup=False,
            )
        loaded, label = cut, f"{skill} (rules alone)"
    trust: dict[str, Any] = {}
    async with eval_session(cfg) as session:
        result = await score_skill(session, loaded, skill, split, label)
        result["rules_alone"] = rules_alone
        if baseline is not None:
            base = await score_skill(session, Skill.load(baseline), baseline, split)
            keys = ("skill", "n", "missing", "mean_score", "pass_rate")
            result["baseline"] = {k: base[k] for k in keys}
            result["paired"] = paired_comparison(result, base)
        out.print(_score_line(result), markup=False)
        if baseline is not None:
            out.print(_paired_line(result), markup=False)
        if repeat >= 2 or headroom:
            repeats = repeat if repeat >= 2 else cfg.train.noise_repeats
            trust = await noise_and_headroom(session, loaded, split, repeats, headroom)
            out.print(trust["noise_floor"]["message"], markup=False)
            if headroom:
                out.print(trust["headroom"]["message"], markup=False)
    result.update(trust)
    return result, trust


def _score_line(result: dict[str, Any]) -> str:
    """``skillgrad eval``'s result, one line: both numbers over the scored items, and how many
    items could not be scored."""
    n, missing = result["n"], result["missing"]
    head = f"{result['split']}: mean score {result['mean_score']:.4f}, pass rate "
    head += f"{result['pass_rate']:.4f} over {n - missing} "
    if not missing:
        return head + f"items ({result['skill']})"
    return head + (
        f"scored items; {missing} of {n} missing (an infrastructure failure, left out) "
        f"({result['skill']})"
    )


def _paired_line(result: dict[str, Any]) -> str:
    """``skillgrad eval --baseline``'s comparison, one line."""
    base, pair = result["baseline"], result["paired"]
    head = f"baseline: mean score {base['mean_score']:.4f} ({base['skill']}); "
    if not pair["n_pairs"]:
        return head + "no item scored by both skills"
    bounds = pair["interval_95"]
    ci = f" [95% CI {bounds[0]:+.4f}, {bounds[1]:+.4f}]" if bounds else " (one item: no interval)"
    return head + (
        f"difference {pair['mean_diff']:+.4f}{ci} over {pair['n_pairs']} items, "
        f"+{pair['wins']} / -{pair['losses']} / ={pair['ties']}, "
        f"sign-flip p = {pair['p_value']:.3g}"
    )


@app.command("config")
@exits()
def show_config(
    config: Annotated[Path | None, typer.Argument(help="YAML config (omit: the defaults).")] = None,
    set_: SetOpt = None,
    optimizer_model: OptModel = None,
    target_model: TgtModel = None,
    schema: Annotated[bool, typer.Option(help="Print the config's JSON schema.")] = False,
    markdown: Annotated[
        bool, typer.Option(help="Print the config reference (docs/config.md) as Markdown.")
    ] = False,
) -> None:
    """Print the fully resolved config (_base_ and --set applied, secrets redacted), its JSON
    schema (--schema) or its reference documentation (--markdown)."""
    import yaml

    from skillgrad.config import config_markdown, config_schema

    if schema:
        out.print(json.dumps(config_schema(), indent=2), markup=False)
        return
    if markdown:
        out.print(config_markdown(), markup=False, end="")
        return
    cfg = _config(config, set_, optimizer_model, target_model)
    out.print(yaml.safe_dump(cfg.redacted_json(), sort_keys=False), markup=False, end="")


@app.command()
@exits()
def report(
    run_dir: Annotated[Path, typer.Argument(help="A run directory.")],
    html: Annotated[bool, typer.Option(help="Also write a self-contained HTML report.")] = False,
) -> None:
    """Print the final report of a run (val initial -> best, test, length, cost, failures),
    or of a sweep directory (mean and 95% interval over seeds per grid configuration)."""
    from skillgrad.sweep.plan import is_sweep_dir

    if is_sweep_dir(run_dir):
        _sweep_report(run_dir, html)
        return
    from skillgrad.runs.integrity import check_no_links
    from skillgrad.runs.io import read_json, read_jsonl
    from skillgrad.runs.view import load_history
    from skillgrad.train.report import render_report

    check_no_links(run_dir)
    paths = RunPaths(run_dir)
    summary = read_json(paths.summary)
    history = load_history(paths.history)
    if summary is None:
        raise SkillgradError(f"{run_dir} has no {paths.summary.name} (not a finished run?)")
    transfer = read_jsonl(paths.transfer)  # skillgrad eval of this run's skills
    _print_markdown(render_report(summary, history, transfer))
    if html:
        try:
            from skillgrad.report.html import write_html_report
        except ImportError as exc:
            raise fail(missing_extra(exc, "report")) from None
        out.print(f"HTML report: {write_html_report(run_dir)}")


def _sweep_report(sweep_dir: Path, html: bool) -> None:
    from skillgrad.report.sweep import (
        load_summary_or_fail,
        render_sweep_text,
        render_transfer_text,
    )
    from skillgrad.sweep.transfer_matrix import load_transfer_summary

    out.print(render_sweep_text(load_summary_or_fail(sweep_dir)), markup=False)
    if (transfer := load_transfer_summary(sweep_dir)) is not None:
        out.print(render_transfer_text(transfer), markup=False)
    if html:
        try:
            from skillgrad.report.sweep_html import write_sweep_html

            page = write_sweep_html(sweep_dir)
        except ImportError as exc:
            raise fail(missing_extra(exc, "report")) from None
        out.print(f"HTML report: {page}")


def _register_commands() -> None:
    """Every other command module adds its commands the same way, ``register(app)``, found as
    an entry point of the ``skillgrad.commands`` group (the built-ins, and any package's). A
    module that cannot be loaded is one error line; the other commands still work."""
    for name in plugin_names(COMMAND_GROUP):
        try:
            load_plugin(COMMAND_GROUP, name, "command module")(app)
        except SkillgradError as exc:
            print_error(exc)


_register_commands()


def main() -> None:  # pragma: no cover - console entry
    sys.exit(app())


__all__ = ["app"]
