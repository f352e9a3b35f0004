"""The skill document — the "weights" being trained — as an immutable value.

``Skill`` exposes Markdown sections (heading paths) and protected blocks, applies structured
edits (the optimizer step) to a copy with an applied/skipped report per edit, and measures
length and diffs. Parsing and tolerant matching live in ``skill.match``.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

from skillgrad.errors import SkillError
from skillgrad.skill.match import (
    AnchorMatch,
    AnchorMiss,
    Block,
    Blocked,
    Section,
    find_anchor,
    format_section_path,
    make_safe,
    open_at_end,
    parse_section_path,
    resolve_path,
    scan,
    squash_spaces,
)
from skillgrad.skill.package import (
    SKILL_FILE,
    SkillPackage,
    clean_path,
    has_file_marker,
    is_package_text,
)
from skillgrad.types import Edit, EditResult

SLOW_UPDATE_SOURCE = "slow_update"
_OPS = ("add", "replace", "delete", "insert_after")
# Anything that looks like a marker, well formed or not: never accepted from edit content.
_MARKERISH = re.compile(r"<!--\s*/?\s*skillgrad:protected", re.IGNORECASE)
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])(?:\s|$)")
_BARE_MARKER = re.compile(r"\s*(?:[-*+]|\d+[.)])?\s*")  # what a deletion may leave of a line
# One token per CJK / kana / hangul character, word, or punctuation mark.
_TOKEN = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]"
    r"|[^\W\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]+"
    r"|[^\w\s]"
)
CHARS_PER_TOKEN = 4


def skill_hash(skill_text: str) -> str:
    """Content hash of a skill document (the key of the per-(skill, item) result cache)."""
    return hashlib.sha256(skill_text.encode("utf-8")).hexdigest()[:16]


def approx_tokens(text: str) -> int:
    """Tokenizer-free length, for a target without a tokenizer of its own: the larger of one
    token per word, punctuation mark or CJK character, and ``ceil(len(text) / 4)`` (BPE's usual
    characters per token), so unspaced text, long identifiers and CJK are never counted as one
    token. Never below characters / 4."""
    pieces = len(_TOKEN.findall(text))
    return max(pieces, -(-len(text) // CHARS_PER_TOKEN))


def text_lines(text: str, keepends: bool = False) -> list[str]:
    """The lines of a skill (or any Markdown) text, split on ``\\n`` only, Markdown's line end:
    ``str.splitlines`` also splits on U+2028, U+2029, U+0085 and the ASCII separators, which a
    model may write inside a line."""
    lines = text.split("\n")
    last = lines.pop()
    if keepends:
        return [line + "\n" for line in lines] + ([last] if last else [])
    return [*lines, last] if last else lines


def unified_diff(a: str, b: str, a_name: str = "a", b_name: str = "b") -> str:
    """A unified diff of two texts ('' when equal), git-style about a missing final newline."""
    lines = difflib.unified_diff(
        text_lines(a, keepends=True), text_lines(b, keepends=True), a_name, b_name
    )
    return "".join(
        ln if ln.endswith("\n") else ln + "\n\\ No newline at end of file\n" for ln in lines
    )


def _label(path: tuple[str, ...]) -> str:
    return f"'{format_section_path(path)}'" if path else "(top of document)"


@dataclass(frozen=True)
class Skill:
    """An immutable skill document; constructing one validates its protected-block markers
    (``SkillError`` on unclosed, nested, duplicate or unmatched ones). A protected block::

        <!-- skillgrad:protected NAME -->
        guidance only the slow update may change
        <!-- /skillgrad:protected NAME -->
    """

    text: str

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise SkillError(f"a skill is text, got {type(self.text).__name__}")
        _ = self._parsed  # validate the markers now, not at first use

    @classmethod
    def load(cls, path: str | Path) -> Skill:
        """Read a UTF-8 Markdown file (BOM dropped, line endings normalised to ``\\n``), or a
        skill package folder (``SKILL.md`` + reference files) as its bundle text."""
        p = Path(path)
        if p.is_dir():
            return cls(SkillPackage.load(p).bundle())
        try:
            raw = p.read_bytes()
        except OSError as e:
            raise SkillError(
                f"cannot read skill file {p}: {e.strerror or e}; "
                "check the path (it must be a readable Markdown file)"
            ) from e
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise SkillError(
                f"skill file {p} is not valid UTF-8 (byte {e.start}); re-save it as UTF-8"
            ) from e
        try:
            return cls(text.replace("\r\n", "\n").replace("\r", "\n"))
        except SkillError as e:
            raise SkillError(f"skill file {p}: {e}") from e

    @cached_property
    def hash(self) -> str:
        """``skill_hash`` of the text: the result-cache key."""
        return skill_hash(self.text)

    @cached_property
    def _lines(self) -> list[str]:
        return self.text.split("\n")

    @cached_property
    def _parsed(self) -> tuple[list[Section], list[Block]]:
        return scan(self._lines)

    def sections(self) -> list[Section]:
        """Every section in document order, the root (text before the first heading) first.
        Headings inside fenced code blocks are not headings."""
        return list(self._parsed[0])

    def find_section(self, section: str) -> Section | None:
        """The section a (possibly sloppy) heading path such as ``"rules/dates"`` names."""
        found = self._resolve(parse_section_path(section))
        return found[0] if found else None

    def _resolve(self, query: tuple[str, ...]) -> tuple[Section, str] | None:
        secs = self._parsed[0]
        found = resolve_path(query, [s.path for s in secs])
        return (secs[found[0]], found[1]) if found else None

    def _offset(self, line: int) -> int:
        """Character offset where ``line`` starts (``len(text)`` past the end)."""
        return min(len(self.text), sum(len(x) + 1 for x in self._lines[:line]))

    def _blocked(self) -> list[Blocked]:
        return [
            Blocked(b.name, (self._offset(b.open), self._offset(b.close + 1)))
            for b in self._parsed[1]
        ]

    def _block_at(self, insert_line: int) -> str | None:
        """The protected block that new lines inserted before ``insert_line`` would land in."""
        return next((b.name for b in self._parsed[1] if b.open < insert_line <= b.close), None)

    def protected_blocks(self) -> dict[str, str]:
        """``{name: content}`` of every protected block (the marker lines excluded)."""
        return {b.name: "\n".join(self._lines[b.open + 1 : b.close]) for b in self._parsed[1]}

    def with_protected_block(
        self, name: str, content: str, section: str = "Longitudinal guidance"
    ) -> Skill:
        """Create or replace protected block ``name`` (replaced in place, markers and all). A new
        block goes at the end of ``section``'s own text; a missing section is created at the end
        of the document. ``content`` is made safe first (``write_protected_block``)."""
        return self.write_protected_block(name, content, section)[0]

    def write_protected_block(
        self, name: str, content: str, section: str = "Longitudinal guidance"
    ) -> tuple[Skill, tuple[str, ...]]:
        """``with_protected_block`` and what was changed to make ``content`` safe: marker-like
        lines dropped, a code fence or HTML block it leaves open closed (``make_safe``), and a
        fence the document itself leaves open at its end closed before a block placed there.
        Model text (the slow update's guidance) enters the skill through here."""
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
            raise SkillError(f"bad protected block name {name!r}: use letters, digits and . _ -")
        if is_package_text(self.text):  # a package keeps its blocks in SKILL.md
            pkg = SkillPackage.from_bundle(self.text)
            head, body = pkg.editable(SKILL_FILE) or ("", "")
            doc, done = Skill(body).write_protected_block(name, content, section)
            return Skill(pkg.with_file(SKILL_FILE, head + doc.text).bundle()), done
        lines = content.strip("\n").split("\n")
        kept = [ln.rstrip() for ln in lines if not _MARKERISH.search(ln)]
        changes: list[str] = []
        if len(kept) < len(lines):
            changes.append(f"dropped {len(lines) - len(kept)} protected-block marker line(s)")
        safe, fixes = make_safe("\n".join(kept))
        inner = safe.split("\n") if safe.strip() else []
        block = [f"<!-- skillgrad:protected {name} -->", *inner]
        block.append(f"<!-- /skillgrad:protected {name} -->")
        old = next((b for b in self._parsed[1] if b.name == name), None)
        if old is not None:
            text = "\n".join(self._lines[: old.open] + block + self._lines[old.close + 1 :])
            return Skill(text), (*changes, *fixes)
        base = self
        left = open_at_end(self.text)
        if left is not None:  # the document's own open fence would swallow a block at its end
            base = Skill(self.text.rstrip("\n") + "\n" + left.closer + "\n")
            changes.append(f"closed the document's {left.describe()} before the block")
        query = parse_section_path(section)
        found = base._resolve(query)
        placed, reason = _place(base, found[0] if found else None, query, block, allowed=True)
        if placed is None:
            raise SkillError(f"cannot place protected block {name!r}: {reason}")
        return Skill(placed), (*changes, *fixes)

    def deployable_text(self) -> str:
        """The text to deploy: exactly ``text``, protected-block markers included.

        The markers are HTML comments (invisible once rendered, a few tokens to a model), and
        keeping them makes the deployed prompt byte-identical to the one the gate scored (same
        hash, same cached results) and lets a later run resume training with its blocks intact.
        """
        return self.text

    def apply(
        self, edits: Sequence[Edit], allow_protected: bool = False
    ) -> tuple[Skill, list[EditResult]]:
        """Apply ``edits`` in order to a copy; each gets an applied/skipped ``EditResult`` whose
        reason says how it matched or why it was skipped. Never raises for a bad edit.

        - ``add``: append ``content`` at the end of the section's *own* text, before its first
          subsection (a missing section is created, parents too, at the end of its parent).
        - ``replace`` / ``delete``: the ``anchor`` text inside the section (a line left empty by a
          delete is removed). Empty ``content`` in a replace means delete.
        - ``insert_after``: ``content`` as new lines after the line where ``anchor`` ends; with no
          anchor it behaves as ``add``.

        The section ``""`` is the whole document. Protected blocks only change for edits whose
        ``source`` is ``"slow_update"``, or when ``allow_protected`` is set.

        Model text enters the skill here: ``content`` is made safe first (``make_safe``: a code
        fence or HTML comment it leaves open is closed; the reason says so, and the result
        carries the edit as applied), and an edit whose result would leave a fence or HTML block
        open to the end of the document (one that was closed before) is skipped.

        A package bundle (``skill.package``) routes each edit to its ``file`` instead.
        """
        if is_package_text(self.text):
            return _apply_package(self.text, edits, allow_protected)
        current = self
        results: list[EditResult] = []
        for edit in edits:
            allowed = allow_protected or getattr(edit, "source", "") == SLOW_UPDATE_SOURCE
            edit, fixes = _made_safe(edit)
            text, reason = _apply_one(current, edit, allowed)
            after = None
            if text is not None:
                after, reason = _checked(current, text, reason, allowed)
            if fixes:
                reason += "; made safe: " + "; ".join(fixes)
            results.append(EditResult(edit, "skipped" if after is None else "applied", reason))
            current = after or current
        return current, results

    def token_length(self, counter: Callable[[str], int] | None = None) -> int:
        """Length in tokens: the target model's tokenizer ``counter`` when given, else
        ``approx_tokens`` (never below characters / 4)."""
        return counter(self.text) if counter is not None else approx_tokens(self.text)

    def diff(self, other: Skill, a_name: str = "before", b_name: str = "after") -> str:
        return unified_diff(self.text, other.text, a_name, b_name)


def _apply_package(
    bundle: str, edits: Sequence[Edit], allow_protected: bool
) -> tuple[Skill, list[EditResult]]:
    """``Skill.apply`` for a package: each edit acts on its ``file`` (default SKILL.md) as on a
    document of its own; ``op: description`` replaces the frontmatter description; an ``add``
    to a missing file creates it."""
    pkg = SkillPackage.from_bundle(bundle)
    results: list[EditResult] = []
    for edit in edits:
        new, reason = _package_edit(pkg, edit, allow_protected)
        results.append(EditResult(edit, "skipped" if new is None else "applied", reason))
        pkg = new or pkg
    return Skill(pkg.bundle()), results


def _package_edit(pkg: SkillPackage, edit: Edit, allowed: bool) -> tuple[SkillPackage | None, str]:
    content = getattr(edit, "content", "")
    if isinstance(content, str) and has_file_marker(content):
        return None, "content contains a skillgrad:file marker"
    if edit.op == "description":
        return pkg.with_description(content)
    try:
        path = clean_path(edit.file or SKILL_FILE)
    except SkillError as exc:
        return None, str(exc)
    found = pkg.editable(path)
    label = f"{path}: "
    if found is None:
        if edit.op not in ("add", "insert_after") or not str(content).strip():
            known = ", ".join(pkg.file_map())
            return None, f"file {path!r} not found (files: {known}); use op add to create it"
        found, label = ("", ""), f"created file {path}; "
    head, text = found
    try:
        doc = Skill(text)
    except SkillError as exc:
        return None, f"{path}: {exc}"
    after, [result] = doc.apply([replace(edit, file="")], allow_protected=allowed)
    if result.status == "skipped":
        return None, f"{path}: {result.reason}"
    try:
        return pkg.with_file(path, head + after.text), label + result.reason
    except SkillError as exc:
        return None, f"would make the package invalid: {exc}"


def _made_safe(edit: Edit) -> tuple[Edit, tuple[str, ...]]:
    """``edit`` with its content made safe (``make_safe``), and what that changed."""
    content = getattr(edit, "content", None)
    if not isinstance(content, str) or not content:
        return edit, ()
    safe, fixes = make_safe(content)
    return (replace(edit, content=safe) if fixes else edit), fixes


def _checked(before: Skill, text: str, reason: str, allowed: bool) -> tuple[Skill | None, str]:
    """Accept an edit's result only if its markers are still well formed, it leaves no fence or
    HTML block open to the end of the document that was closed before, and, for a normal edit,
    every protected block is unchanged: a guarantee that does not rely on the matcher."""
    try:
        after = Skill(text)
    except SkillError as e:
        return None, f"would break protected-block markers ({e})"
    left = open_at_end(text)
    if left is not None and open_at_end(before.text) is None:
        return None, f"would leave the {left.describe()} open to the end of the document"
    if not allowed:
        old, new = before.protected_blocks(), after.protected_blocks()
        changed = sorted(n for n in old.keys() | new.keys() if old.get(n) != new.get(n))
        if changed:
            return None, f"protected block {changed[0]}"
    return after, reason


def _invalid(edit: Edit) -> str | None:
    op = getattr(edit, "op", None)
    if op not in _OPS:
        return f"unknown op {op!r} (expected one of: {', '.join(_OPS)})"
    for field in ("section", "content", "anchor"):
        if not isinstance(getattr(edit, field, None), str):
            return f"invalid edit: {field} must be text, got {type(getattr(edit, field, None))}"
    if _MARKERISH.search(edit.content):
        return "content contains protected-block markers (only with_protected_block adds them)"
    if op in ("add", "insert_after") and not edit.content.strip():
        return "empty content"
    if op in ("replace", "delete") and not edit.anchor.strip():
        return "empty anchor"
    return None


def _apply_one(skill: Skill, edit: Edit, allowed: bool) -> tuple[str | None, str]:
    problem = _invalid(edit)
    if problem:
        return None, problem
    if edit.op == "add" or not edit.anchor.strip():
        query = parse_section_path(edit.section)
        found = skill._resolve(query)
        if found is not None:
            sec = found[0]
            here = "\n".join(skill._lines[sec.content_start : sec.end])
            if squash_spaces(edit.content) in squash_spaces(here):
                return None, "already present"
        new_lines = edit.content.strip("\n").split("\n")
        text, reason = _place(skill, found[0] if found else None, query, new_lines, allowed)
        if found is not None and found[1] != "exact" and text is not None:
            reason += f"; section {_label(query)} matched {_label(found[0].path)} ({found[1]})"
        return text, reason if edit.op == "add" else f"{reason} (no anchor: added)"
    return _anchored(skill, edit, allowed)


def _place(
    skill: Skill, sec: Section | None, query: tuple[str, ...], new: list[str], allowed: bool
) -> tuple[str | None, str]:
    """Insert ``new`` lines at the end of ``sec``'s own text, or create ``query``'s section."""
    lines = skill._lines
    if sec is None:
        parent, missing = _parent_of(skill, query)
        level = _child_level(skill, parent)
        last = max((i for i in range(parent.start, parent.end) if lines[i].strip()), default=-1)
        at, chunk = last + 1, ([""] if last >= 0 else [])
        for k, title in enumerate(missing):
            chunk += ([""] if k else []) + ["#" * min(level + k, 6) + " " + title]
        chunk += new
        reason = f"created section {_label(parent.path + missing)}"
    else:
        own = range(sec.content_start, sec.body_end)
        last = max((i for i in own if lines[i].strip()), default=-1)
        at = last + 1 if last >= 0 else sec.content_start
        glued = last >= 0 and _LIST_ITEM.match(lines[last]) and _LIST_ITEM.match(new[0])
        chunk = ([""] if last >= 0 and not glued else []) + new
        reason = f"appended to section {_label(sec.path)}"
    block = skill._block_at(at)
    if block is not None and not allowed:
        return None, f"protected block {block}"
    if at < len(lines) and lines[at].strip():
        chunk.append("")  # keep a blank line before whatever follows (usually a heading)
    return "\n".join(lines[:at] + chunk + lines[at:]), reason


def _parent_of(skill: Skill, query: tuple[str, ...]) -> tuple[Section, tuple[str, ...]]:
    """The deepest existing section on ``query``'s path, and the titles still missing."""
    for depth in range(len(query) - 1, 0, -1):
        found = skill._resolve(query[:depth])
        if found is not None:
            return found[0], query[depth:]
    return skill._parsed[0][0], query


def _child_level(skill: Skill, parent: Section) -> int:
    """Heading level for a new child: that of the parent's existing children, else one deeper."""
    kids = [
        s
        for s in skill._parsed[0]
        if s is not parent and parent.start <= s.start < parent.end and s.path[:-1] == parent.path
    ]
    return kids[0].level if kids else min(parent.level + 1, 6)


def _section_at(skill: Skill, offset: int) -> Section:
    line = skill.text.count("\n", 0, offset)
    return [s for s in skill._parsed[0] if s.start <= line < s.end][-1]


def _anchored(skill: Skill, edit: Edit, allowed: bool) -> tuple[str | None, str]:
    """replace / delete / insert_after: find the anchor in its section, else (only when it is
    unique there) anywhere in the document."""
    text, blocked = skill.text, ([] if allowed else skill._blocked())
    query = parse_section_path(edit.section)
    found = skill._resolve(query)
    notes: list[str] = []
    res: AnchorMatch | AnchorMiss = AnchorMiss("not_found", "")
    if found is None:
        secs = ", ".join(f"'{s.name}'" for s in skill._parsed[0][1:13]) or "none"
        miss = f"section {_label(query)} not found (available: {secs})"
    else:
        sec, how = found
        scope = (skill._offset(sec.content_start), skill._offset(sec.end))
        res = find_anchor(text, edit.anchor, scope, blocked)
        miss = f"anchor not found in section {_label(sec.path)}"
        if how != "exact":
            notes.append(f"section {_label(query)} matched {_label(sec.path)} ({how})")
    if isinstance(res, AnchorMiss) and res.kind == "not_found" and query:
        res = find_anchor(text, edit.anchor, (0, len(text)), blocked)
        if isinstance(res, AnchorMatch):
            where = _section_at(skill, res.start).path
            notes = [f"anchor found in section {_label(where)} instead of {_label(query)}"]
        elif res.kind != "protected":
            return None, miss if res.kind == "not_found" else f"{miss}; elsewhere: {res.reason}"
    if isinstance(res, AnchorMiss):
        return None, res.reason
    new = _edit_span(skill, edit, res.start, res.end, allowed)
    if isinstance(new, tuple):
        return None, new[0]
    return new, "; ".join([res.how, *notes])


def _edit_span(skill: Skill, edit: Edit, start: int, end: int, allowed: bool) -> str | tuple[str]:
    """The new text after ``edit`` acts on the matched span, or ``(reason,)`` to skip."""
    text = skill.text
    if edit.op == "insert_after":
        if squash_spaces(edit.content) in squash_spaces(_section_at(skill, start).body):
            return ("already present",)
        nl = text.find("\n", max(start, end - 1))
        block = skill._block_at(text.count("\n", 0, nl) + 1) if nl != -1 else None
        if block is not None and not allowed:
            return (f"protected block {block}",)
        content = edit.content.strip("\n")
        return (
            text + "\n" + content if nl == -1 else text[: nl + 1] + content + "\n" + text[nl + 1 :]
        )
    if edit.op == "replace" and edit.content:
        if text[start:end] == edit.content:
            return ("no change (content equals the anchor)",)
        return text[:start] + edit.content + text[end:]
    return _delete(text, start, end)


def _delete(text: str, start: int, end: int) -> str:
    """Remove ``text[start:end]``; drop the line if nothing (or a bare list marker) is left of
    it, and never leave two blank lines where there was one."""
    out = text[:start] + text[end:]
    ls = out.rfind("\n", 0, start) + 1
    le = out.find("\n", start)
    le = len(out) if le == -1 else le
    if not _BARE_MARKER.fullmatch(out[ls:le]):
        return out[:ls] + out[ls:le].rstrip() + out[le:]
    out = out[:ls] + out[le + 1 :] if le < len(out) else out[: max(ls - 1, 0)]
    lines = out.split("\n")
    row = out.count("\n", 0, ls)
    blank_above = row == 0 or not lines[row - 1].strip()
    if len(lines) > 1 and row < len(lines) and not lines[row].strip() and blank_above:
        del lines[row]
    return "\n".join(lines)


__all__ = [
    "SLOW_UPDATE_SOURCE",
    "Section",
    "Skill",
    "approx_tokens",
    "format_section_path",
    "parse_section_path",
    "skill_hash",
    "squash_spaces",
    "text_lines",
    "unified_diff",
]
