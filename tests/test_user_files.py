"""A user's ``file.py:attr`` can import the modules next to it, as ``python file.py`` could
(issue 11 §6: it raised ModuleNotFoundError)."""

from __future__ import annotations

from pathlib import Path

from skillgrad.plugins import resolve_object
from skillgrad.scorers import build_scorer


def test_a_scorer_file_imports_its_sibling_module(tmp_path: Path) -> None:
    (tmp_path / "sibling_norm_x1.py").write_text(
        "def norm(text):\n    return ' '.join(text.lower().split())\n"
    )
    (tmp_path / "my_scorer.py").write_text(
        "from sibling_norm_x1 import norm\n\n"
        "def score(output, item):\n"
        "    return float(norm(output) == norm(item['answer']))\n\n"
        "def lazy(output, item):\n"
        "    import sibling_lazy_x1\n"
        "    return sibling_lazy_x1.VALUE\n"
    )
    (tmp_path / "sibling_lazy_x1.py").write_text("VALUE = 0.5\n")
    score = resolve_object("my_scorer.py:score", base_dir=tmp_path)
    assert score("  Paris ", {"answer": "paris"}) == 1.0
    # through the scorer spec of a config, relative to the config's folder; an import done
    # later, at scoring time, works too
    scorer = build_scorer("my_scorer.py:lazy", base_dir=tmp_path)
    assert scorer.score("x", {"answer": "y"}).value == 0.5
