"""Built-in benchmark ``ifbench``: AllenAI's IFBench (precise instruction following), offline.

``data``: the pinned data bundle (prompts and the official checkers); ``checkers``: running the
official checkers on a reply; ``task``: the task itself.
"""

from skillgrad.benchmarks.ifbench.task import IFBenchTask

__all__ = ["IFBenchTask"]
