"""Reading an export back the way each agent reads it."""

from __future__ import annotations

from pathlib import Path

import yaml


def frontmatter(path: Path) -> tuple[dict[str, object], str]:
    """A skill file read the way an agent reads it: the YAML between the first two '---'
    lines (parsed by a YAML parser), then the body."""
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n"), text[:80]
    head, _, body = text[4:].partition("\n---\n")
    data = yaml.safe_load(head)
    assert isinstance(data, dict)
    return data, body
