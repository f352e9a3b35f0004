"""The one YAML loader of everything skillgrad reads: run configs, sweep values, the model
catalog, SKILL.md frontmatter.

A ``SafeLoader`` (no Python objects) that refuses what PyYAML would accept silently or choke on:
a key given twice (PyYAML keeps the last: a second ``sha256:`` replaced the first), nesting so
deep the composer recurses out of the stack, and aliases enough to expand into a huge document.
Every refusal is the caller's error class, naming the source and the line.
"""

from __future__ import annotations

from typing import Any

import yaml

from skillgrad.errors import ConfigError, SkillgradError

MAX_ALIASES = 100  # a hand-written file needs a few; thousands expand exponentially downstream


class _Refused(Exception):
    """Raised inside the loader; turned into the caller's error class with the source."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """A SafeLoader that refuses a mapping with the same key twice and counts aliases."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.aliases = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                line = self.peek_event().start_mark.line + 1
                raise _Refused(f"more than {MAX_ALIASES} aliases (line {line}); write it out")
        return super().compose_node(parent, index)

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, list | dict):
                continue  # unhashable: the base class reports it
            if key in seen:
                first = seen[key].start_mark.line + 1
                raise _Refused(
                    f"key {key!r} appears twice (line {first} and line "
                    f"{key_node.start_mark.line + 1}); keep one of them"
                )
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str, source: str, error: type[SkillgradError] = ConfigError) -> Any:
    """Parse YAML ``text``; anything refused or malformed raises ``error`` naming ``source``."""
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass: safe
    except _Refused as exc:
        raise error(f"{source}: {exc}") from None
    except RecursionError:
        raise error(
            f"{source}: nested too deeply to read (lists or mappings inside each other)"
        ) from None
    except yaml.YAMLError as exc:
        where = str(exc).replace('"<unicode string>"', source)
        raise error(f"{source}: invalid YAML: {where}") from None


__all__ = ["MAX_ALIASES", "load_yaml"]
