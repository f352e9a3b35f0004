"""Semantic merge: one optimizer call per (op, section) cluster; only partitions are trusted."""

from __future__ import annotations

from skillgrad.testing import ScriptedBackend
from skillgrad.train.merge import is_partition, semantic_merge
from skillgrad.types import Edit


def _e(content: str, section: str = "Format", ids: tuple[str, ...] = ("s/1",)) -> Edit:
    return Edit("add", section, content, support=len(ids), trajectory_ids=ids)


async def test_equivalent_edits_merge_with_support_and_ids() -> None:
    edits = [
        _e("Answer with one word.", ids=("s/1", "s/2")),
        _e("Keep it short.", section="Style"),
        _e("Reply using a single word only.", ids=("s/3",)),
    ]
    opt = ScriptedBackend().expect("Group the indices", {"groups": [[0, 1]]})
    merged, records = await semantic_merge(edits, opt, step=1, max_tokens=100)
    opt.assert_done()  # one call: the 'Style' edit is alone in its cluster
    assert [e.content for e in merged] == ["Answer with one word.", "Keep it short."]
    assert merged[0].support == 3 and merged[0].trajectory_ids == ("s/1", "s/2", "s/3")
    assert records[0]["ok"] and records[0]["edits"] == [0, 2]


async def test_a_reply_that_is_not_a_partition_keeps_the_lexical_result() -> None:
    edits = [_e("a rule"), _e("another rule")]
    opt = ScriptedBackend().expect("Group the indices", {"groups": [[0, 0, 5]]})
    merged, records = await semantic_merge(edits, opt, step=1, max_tokens=100)
    assert merged == edits
    assert "lexical merge result kept" in records[0]["kept"]


async def test_no_call_without_a_cluster() -> None:
    merged, records = await semantic_merge([_e("x")], ScriptedBackend(), step=1, max_tokens=9)
    assert len(merged) == 1 and records == []


def test_partition_check() -> None:
    assert is_partition([[1], [0, 2]], 3)
    assert not is_partition([[0], [0, 1, 2]], 3)
    assert not is_partition([[0, 1], []], 2)
