"""The README stays a short product page whose every command, config snippet and link works:
each `skillgrad ...` line of a code block parses against the real CLI (the command and every
option exist), each YAML snippet is a valid config, each relative link and repository path
exists (a link's #anchor names a heading of its page)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from skillgrad.cli import app
from skillgrad.config import load_config
from skillgrad.errors import SkillgradError
from skillgrad.registry import load_task

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MAX_LINES = 160
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.DOTALL | re.MULTILINE)
LINK = re.compile(r"\]\(([^)\s]+)\)")
REPO_PATH = re.compile(r"`((?:docs|configs|scripts|examples|bench|src)/[^`\s{}*]*)`")
runner = CliRunner()


def blocks(kind: str, text: str | None = None) -> list[str]:
    text = README.read_text(encoding="utf-8") if text is None else text
    return [body for lang, body in FENCE.findall(text) if lang == kind]


def commands(text: str | None = None) -> list[list[str]]:
    """Every `skillgrad` command line of the bash blocks, as arguments (comments dropped)."""
    found = []
    for body in blocks("bash", text):
        for line in body.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words and words[0] in ("skillgrad", ".venv/bin/skillgrad"):
                found.append(words[1:])
    return found


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {slug(m) for m in re.findall(r"^#+ (.+)$", text, re.MULTILINE)}


def test_the_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"README.md has {lines} lines; move detail to docs/"


def test_every_skillgrad_command_parses_against_the_cli() -> None:
    found = commands()
    assert len(found) >= 4 and any(c[0] == "export" for c in found)
    for args in found:
        result = runner.invoke(app, [*args, "--help"])
        assert result.exit_code == 0 and "Usage:" in result.output, (args, result.output)


def test_a_command_the_cli_does_not_have_is_caught() -> None:
    text = "```bash\nskillgrad export runs/x --to claude-code --no-such-flag\n```\n"
    (args,) = commands(text)
    assert runner.invoke(app, [*args, "--help"]).exit_code == 2


def test_every_setup_command_names_a_real_script() -> None:
    scripts = [line.split()[1] for body in blocks("bash") for line in body.splitlines()
               if line.startswith("bash ")]  # fmt: skip
    assert scripts == ["scripts/quickstart", "scripts/test"]
    assert all((ROOT / s).is_file() for s in scripts)


def option_problem(snippet: str, base: Path) -> str:
    """'' when the snippet's config keys and task options are all known names, else the error
    (a missing agent CLI or data folder is not the snippet's fault: only names are checked)."""
    try:
        cfg = load_config(data=yaml.safe_load(snippet))  # unknown keys: "did you mean"
    except SkillgradError as exc:
        return str(exc)
    try:
        load_task(cfg.env.task, cfg.env.options, base)
    except SkillgradError as exc:
        text = str(exc)
        return text if "unknown option" in text or "do not fit" in text else ""
    return ""


@pytest.mark.parametrize("snippet", blocks("yaml"))
def test_every_yaml_snippet_is_a_valid_config(snippet: str, tmp_path: Path) -> None:
    assert option_problem(snippet, tmp_path) == ""


def test_a_snippet_with_a_wrong_option_is_caught(tmp_path: Path) -> None:
    wrong = "env: {task: environment, options: {env: 'my_env.py:MyEnv', n_trains: 20}}"
    assert "unknown option 'n_trains'" in option_problem(wrong, tmp_path)
    wrong = "env: {task: data, options: {split_dir: data/, reference_feld: answer}}"
    assert "reference_feld" in option_problem(wrong, tmp_path)
    assert "did you mean" in option_problem("trian: {num_epochs: 2}", tmp_path).lower()


def test_every_relative_link_and_path_exists() -> None:
    text = README.read_text(encoding="utf-8")
    links = [x for x in LINK.findall(text) if "://" not in x]
    assert any(x.startswith("docs/") for x in links)
    for link in links:
        path, _, anchor = link.partition("#")
        page = ROOT / path
        assert page.exists(), f"README links to {link}: no such file"
        if anchor:
            assert anchor in anchors(page), f"README links to {link}: no such heading"
    for path in REPO_PATH.findall(text):
        assert (ROOT / path).exists(), f"README names {path}: no such file or folder"
