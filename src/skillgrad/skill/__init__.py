"""The skill document: ``document`` (``Skill``: parse, apply edits, hash), ``match`` (finding
anchors and sections in Markdown), ``package`` (SKILL.md packages with their files) and ``text``
(the text helpers every room uses, the rule for outside text first).
"""

from skillgrad.skill.document import Skill, skill_hash

__all__ = ["Skill", "skill_hash"]
