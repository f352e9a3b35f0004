"""Live dashboard: a small local web app over a folder of run directories.

It only reads run directories (``skillgrad.runs.view``); a page polls a JSON endpoint to
update its curve while a run writes new steps. No external resources are loaded.
"""

from skillgrad.dashboard.app import check_host, create_app, serve

__all__ = ["check_host", "create_app", "serve"]
