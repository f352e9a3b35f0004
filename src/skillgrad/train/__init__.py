"""The training algorithm: read ``loop.py`` first; ``skillgrad.session`` assembles a run."""
