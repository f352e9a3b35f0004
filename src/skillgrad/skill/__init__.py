"""The skill document: ``document`` (``Skill``: parse, apply edits, hash), ``match`` (finding
anchors and sections in Markdown) and ``package`` (SKILL.md packages with their files).
"""

from skillgrad.skill.document import Skill, skill_hash

__all__ = ["Skill", "skill_hash"]
