"""Skill packages: a folder with ``SKILL.md`` (frontmatter ``name`` + ``description``, then the
body) and reference files, trained as one parameter.

The training loop carries a package as one *bundle* string (hashed, cached, checkpointed like a
single-file skill): every file introduced by a marker line, ``SKILL.md`` first::

    <!-- skillgrad:file SKILL.md -->
    ---
    name: pdf-forms
    description: Use when ...
    ---
    body
    <!-- skillgrad:file references/fields.md -->
    text of the reference file

A text is a bundle exactly when its first line is the ``SKILL.md`` marker, so single-file skills
are untouched everywhere. ``SkillPackage`` validates against the Agent Skills conventions, gives
the building blocks of edits (a file's editable text, the frontmatter description; ``name``
never changes), renders the chat-target prompt and writes a ready-to-install folder. Routing
edits to files is ``Skill.apply`` (skill/document.py, the layer above).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import yaml

from skillgrad.errors import SkillError

SKILL_FILE = "SKILL.md"
MAX_NAME = 64
MAX_DESCRIPTION = 1024
_MARKER = re.compile(r"^<!-- skillgrad:file (\S+) -->$")
_MARKERISH = re.compile(r"<!--\s*skillgrad:file", re.IGNORECASE)
_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_FRONT = re.compile(r"\A---\n(.*?\n)?---(?:\n|\Z)", re.DOTALL)
_TOKEN = re.compile(r"\w+|[^\w\s]")


def marker(path: str) -> str:
    return f"<!-- skillgrad:file {path} -->"


def is_package_text(text: str) -> bool:
    """True when ``text`` is a package bundle (its first line is the SKILL.md marker)."""
    return text.split("\n", 1)[0] == marker(SKILL_FILE)


def prompt_text(skill_text: str) -> str:
    """What a chat target sees as its system prompt: a bundle rendered (``SKILL.md`` body, then
    each other file under a heading naming its path); any other text unchanged."""
    return (
        SkillPackage.from_bundle(skill_text).render_prompt()
        if is_package_text(skill_text)
        else skill_text
    )


def split_frontmatter(text: str) -> tuple[dict[str, object] | None, str]:
    """(frontmatter mapping or None when absent, body). Raises SkillError on invalid YAML."""
    m = _FRONT.match(text)
    if m is None:
        return None, text
    try:
        data = yaml.safe_load(m.group(1) or "") or {}
    except yaml.YAMLError as exc:
        raise SkillError(f"{SKILL_FILE}: the frontmatter is not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise SkillError(
            f"{SKILL_FILE}: the frontmatter must be a mapping (name: ..., description: ...)"
        )
    return data, text[m.end() :]


def clean_path(path: str) -> str:
    """A package-relative POSIX path; SkillError for absolute paths, ``..`` or markers."""
    raw = (path or SKILL_FILE).strip().replace("\\", "/")
    p = PurePosixPath(raw)
    parts = [x for x in p.parts if x not in ("", ".")]
    if p.is_absolute() or ".." in parts or not parts or any(c.isspace() for c in raw):
        raise SkillError(
            f"bad file path {path!r} in a skill package: use a relative path inside the "
            "package without spaces or '..', e.g. references/forms.md"
        )
    return "/".join(parts)


def validation_problems(files: dict[str, str]) -> list[str]:
    """Every way ``files`` breaks the Agent Skills conventions ([] when it is a valid package)."""
    if SKILL_FILE not in files:
        return [f"no {SKILL_FILE} at the top of the package"]
    try:
        front, _ = split_frontmatter(files[SKILL_FILE])
    except SkillError as exc:
        return [str(exc)]
    if front is None:
        return [
            f"{SKILL_FILE} has no frontmatter: start it with '---', 'name: my-skill', "
            "'description: Use when ...', '---'"
        ]
    problems = []
    name, desc = front.get("name"), front.get("description")
    if not isinstance(name, str) or not name:
        problems.append(f"{SKILL_FILE} frontmatter: 'name' is missing")
    elif len(name) > MAX_NAME or not _NAME.match(name):
        problems.append(
            f"{SKILL_FILE} frontmatter: name {name!r} must be lowercase letters, digits and "
            f"single hyphens (not at either end), at most {MAX_NAME} characters"
        )
    if not isinstance(desc, str) or not desc.strip():
        problems.append(f"{SKILL_FILE} frontmatter: 'description' is missing or empty")
    elif len(desc) > MAX_DESCRIPTION:
        problems.append(
            f"{SKILL_FILE} frontmatter: description has {len(desc)} characters "
            f"(at most {MAX_DESCRIPTION})"
        )
    for path, text in files.items():
        if any(_MARKER.match(line) for line in text.split("\n")):
            problems.append(f"{path}: contains a skillgrad:file marker line")
    return problems


def _with_description(text: str, description: str) -> str:
    """SKILL.md with its frontmatter ``description`` replaced; every other line kept as is."""
    m = _FRONT.match(text)
    assert m is not None  # callers validated the package
    lines = (m.group(1) or "").rstrip("\n").split("\n")
    new = yaml.safe_dump({"description": description}, allow_unicode=True, width=10_000).strip()
    out: list[str] = []
    skipping = False
    for line in lines:
        if re.match(r"^description\s*:", line):
            out.append(new)
            skipping = True
        elif skipping and (line.startswith((" ", "\t")) or not line.strip()):
            continue  # continuation of a multi-line description
        else:
            skipping = False
            out.append(line)
    if new not in out:
        out.append(new)
    return "---\n" + "\n".join(out) + "\n---\n" + text[m.end() :]


@dataclass(frozen=True)
class SkillPackage:
    """An immutable, validated skill package: ``files`` maps relative paths to UTF-8 text."""

    files: tuple[tuple[str, str], ...]

    def __post_init__(self) -> None:
        problems = validation_problems(dict(self.files))
        if problems:
            raise SkillError("invalid skill package:\n  " + "\n  ".join(problems))

    @classmethod
    def from_files(cls, files: dict[str, str]) -> SkillPackage:
        ordered = sorted(files.items(), key=lambda kv: (kv[0] != SKILL_FILE, kv[0]))
        return cls(tuple((clean_path(p), t) for p, t in ordered))

    @classmethod
    def load(cls, folder: str | Path) -> SkillPackage:
        """Read every file under ``folder`` (UTF-8 text; line endings normalised). The folder
        may be named through a link, but nothing inside it may be one: a symlink, or anything
        that is not a regular file or folder, is a SkillError naming it (a package's text goes
        into prompts and run directories, so a link must not pull in a file from elsewhere)."""
        root = Path(folder)
        base = root.resolve()
        if not (base / SKILL_FILE).is_file():
            raise SkillError(
                f"{root} is not a skill package: it has no {SKILL_FILE} "
                "(a package is a folder with SKILL.md and optional references/)"
            )
        files: dict[str, str] = {}
        for p in sorted(base.rglob("*")):  # rglob never descends into a linked folder
            rel = p.relative_to(base).as_posix()
            if any(part.startswith(".") for part in rel.split("/")):
                continue
            _check_entry(root, rel, p, base)
            if p.is_file():
                files[rel] = _read_text_file(p)
        try:
            return cls.from_files(files)
        except SkillError as exc:
            raise SkillError(f"skill package {root}: {exc}") from exc

    @classmethod
    def from_bundle(cls, text: str) -> SkillPackage:
        if not is_package_text(text):
            raise SkillError("not a skill package bundle (it must start with the SKILL.md marker)")
        files: dict[str, list[str]] = {}
        current: list[str] = []
        for line in text.split("\n"):
            m = _MARKER.match(line)
            if m:
                current = files.setdefault(m.group(1), [])
            else:
                current.append(line)
        return cls.from_files({p: "\n".join(lines) for p, lines in files.items()})

    def bundle(self) -> str:
        return "\n".join(f"{marker(p)}\n{t}" for p, t in self.files)

    def file_map(self) -> dict[str, str]:
        return dict(self.files)

    @property
    def frontmatter(self) -> dict[str, object]:
        front, _ = split_frontmatter(self.file_map()[SKILL_FILE])
        return front or {}

    @property
    def name(self) -> str:
        return str(self.frontmatter["name"])

    @property
    def description(self) -> str:
        return str(self.frontmatter["description"])

    @property
    def body(self) -> str:
        return split_frontmatter(self.file_map()[SKILL_FILE])[1]

    def render_prompt(self) -> str:
        """The chat-target view: the SKILL.md body, then each other file under ``# <path>``."""
        parts = [self.body.strip()]
        parts += [f"# {p}\n\n{t.strip()}" for p, t in self.files if p != SKILL_FILE]
        return "\n\n".join(x for x in parts if x) + "\n"

    def write(self, folder: str | Path) -> Path:
        """Write the package as a ready-to-install folder (created; existing files replaced)."""
        root = Path(folder)
        for path, text in self.files:
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        return root

    def token_lengths(self, counter: Callable[[str], int] | None = None) -> dict[str, int]:
        """Length of each file (the model's tokenizer ``counter`` or word/punctuation count)."""
        count = counter or (lambda t: len(_TOKEN.findall(t)))
        return {p: count(t) for p, t in self.files}

    def editable(self, path: str) -> tuple[str, str] | None:
        """(head, text) of file ``path`` for a document edit — SKILL.md's frontmatter is the head
        and never edited as text (the ``description`` op changes it) — or None if absent."""
        text = self.file_map().get(path)
        if text is None:
            return None
        front = _FRONT.match(text) if path == SKILL_FILE else None
        return (text[: front.end()], text[front.end() :]) if front else ("", text)

    def with_file(self, path: str, text: str) -> SkillPackage:
        """A copy with file ``path`` set to ``text`` (created if new); validated."""
        return SkillPackage.from_files({**self.file_map(), clean_path(path): text})

    def with_description(self, content: str) -> tuple[SkillPackage | None, str]:
        """A copy with a new frontmatter description (whitespace collapsed), or (None, why)."""
        new = " ".join(content.split()) if isinstance(content, str) else ""
        if not new:
            return None, "empty description"
        if len(new) > MAX_DESCRIPTION:
            return None, f"description too long ({len(new)} > {MAX_DESCRIPTION} characters)"
        if new == self.description:
            return None, "no change (same description)"
        return self.with_file(SKILL_FILE, _with_description(self.file_map()[SKILL_FILE], new)), (
            "description replaced"
        )


def _check_entry(root: Path, rel: str, path: Path, base: Path) -> None:
    """Refuse a symlink, a special file, or a path that resolves outside the package."""
    fix = "copy the file into the package, or remove it"
    if path.is_symlink():
        raise SkillError(
            f"skill package {root}: {rel} is a symlink (to {os.readlink(path)}); skillgrad does "
            f"not follow links out of a package: {fix}"
        )
    if not (path.is_file() or path.is_dir()):
        raise SkillError(f"skill package {root}: {rel} is not a regular file or folder: {fix}")
    if not path.resolve().is_relative_to(base):
        raise SkillError(f"skill package {root}: {rel} resolves outside the package: {fix}")


def _read_text_file(path: Path) -> str:
    """A package file's text, opened without following a link (one swapped in after the check
    fails with ELOOP)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise SkillError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise SkillError(
            f"{path}: not UTF-8 text; skillgrad trains text packages only — move binary "
            "assets out of the package folder"
        ) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def has_file_marker(text: str) -> bool:
    """Whether ``text`` contains anything like a file marker (never accepted in edit content)."""
    return bool(_MARKERISH.search(text))


def file_lengths(
    skill_text: str, counter: Callable[[str], int] | None = None
) -> dict[str, int] | None:
    """Length of each file of a package bundle plus ``"(total)"``; None for a single file."""
    if not is_package_text(skill_text):
        return None
    lengths = SkillPackage.from_bundle(skill_text).token_lengths(counter)
    return {**lengths, "(total)": sum(lengths.values())}


__all__ = [
    "MAX_DESCRIPTION",
    "MAX_NAME",
    "SKILL_FILE",
    "SkillPackage",
    "clean_path",
    "file_lengths",
    "has_file_marker",
    "is_package_text",
    "prompt_text",
    "split_frontmatter",
    "validation_problems",
]
