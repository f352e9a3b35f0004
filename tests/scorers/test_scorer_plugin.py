"""A scorer added the way docs/providers.md says: one file plus an entry point, in a package of
its own (here a real distribution on ``sys.path``: a module and its ``.dist-info`` with
``entry_points.txt``, exactly what ``pip install`` leaves behind). skillgrad finds it by name,
with its options, like a built-in."""

from __future__ import annotations

import importlib
import textwrap
from pathlib import Path

import pytest

from skillgrad.errors import ConfigError
from skillgrad.scorers import build_scorer, scorer_names
from skillgrad.types import Item

SCORER_FILE = '''
"""A third-party scorer: the output is the reference, shouted."""

from skillgrad.scorers.base import BaseScorer
from skillgrad.types import Item, Score


class ShoutScorer(BaseScorer):
    name = "shout"

    def __init__(self, marks: int = 1) -> None:
        self.marks = marks

    def _score(self, output: str, item: Item) -> Score:
        want = str(item.reference).upper() + "!" * self.marks
        ok = output.strip() == want
        return Score(float(ok), ok, "correct" if ok else f"expected {want!r}")
'''


def _install(site: Path) -> None:
    (site / "shout_scorer.py").write_text(textwrap.dedent(SCORER_FILE), encoding="utf-8")
    dist = site / "shout_scorer-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: shout-scorer\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[skillgrad.scorers]\nshout = shout_scorer:ShoutScorer\n"
    )


def test_a_scorer_registered_by_another_package_is_found_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match="unknown scorer 'shout'"):
        build_scorer("shout")
    _install(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    assert "shout" in scorer_names() and "exact" in scorer_names()
    scorer = build_scorer({"name": "shout", "marks": 2})
    item = Item(id="i1", input="say hi", reference="hi")
    assert scorer.score("HI!!", item).passed
    assert not scorer.score("hi", item).passed
    with pytest.raises(ConfigError, match="Did you mean 'marks'"):
        build_scorer({"name": "shout", "mark": 2})
