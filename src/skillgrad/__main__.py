"""``python -m skillgrad`` runs the CLI."""

from skillgrad.cli.main import app

app()
