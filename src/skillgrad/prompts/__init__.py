"""Every prompt skillgrad sends to a model, one ``<name>.md`` template per message, in this folder.

Call kinds and their templates: the optimizer's ``reflect``, ``deep_reflect``, ``merge``,
``rank``, ``slow_update`` and ``meta_skill`` (each ``<kind>_system.md`` + ``<kind>_user.md``), the
LLM judge scorer (``judge_system.md`` + ``judge_user.md``), and the one re-ask after an invalid
structured reply (``reask.md``; the judge's is ``judge_reask.md``). Templates are reviewed like code
and ship inside the wheel; code only fills their ``$field`` placeholders.
"""

from __future__ import annotations

from importlib import resources
from string import Template


def render_prompt(name: str, **fields: object) -> str:
    """``<name>.md`` with ``$field`` placeholders filled (``str`` of each value).

    Raises KeyError naming a placeholder that was not given, FileNotFoundError for an unknown name.
    """
    text = resources.files(__name__).joinpath(f"{name}.md").read_text("utf-8")
    return Template(text).substitute({k: str(v) for k, v in fields.items()})


def prompt_head(name: str) -> str:
    """The fixed opening of ``<name>.md``: its text before the first ``$field`` placeholder (all
    of it when it has none), stripped; what tells a call's prompt apart without its fields."""
    text = resources.files(__name__).joinpath(f"{name}.md").read_text("utf-8")
    for m in Template.pattern.finditer(text):
        if m.group("named") or m.group("braced"):
            text = text[: m.start()]
            break
    return Template(text).safe_substitute().strip()


__all__ = ["prompt_head", "render_prompt"]
