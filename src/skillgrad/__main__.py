"""``python -m skillgrad`` runs the CLI."""

from skillgrad.cli import app

app()
