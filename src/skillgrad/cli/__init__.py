"""The ``skillgrad`` command line (``main``: the Typer app); each other module adds its
commands (``views``, ``sweep``, ``transfer``, ``data``, ``models``, ``export``); ``console``:
the output.
"""

from skillgrad.cli.main import app

__all__ = ["app"]
