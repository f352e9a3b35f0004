"""Built-in benchmark ``bfcl``: the Berkeley Function Calling Leaderboard's single-turn Python
categories (data from the pinned ``bfcl-eval`` wheel), scored by BFCL's AST-checker rules.

``data``: the pinned files and categories; ``parse``: reading calls with ``ast``; ``check``: the
per-call rules; ``score``: matching, partial credit and feedback; ``task``: the task itself.
"""

from skillgrad.benchmarks.bfcl.task import BfclBenchmark

__all__ = ["BfclBenchmark"]
