"""Any text a model can emit round-trips through every file of a run directory.

Property tests (hypothesis) of the writers and readers of ``runs/io.py`` and the call cache with
arbitrary Unicode, U+2028 / U+2029 / U+0085 and the ASCII separators included (``str.splitlines``
takes them all for line ends); then a real ``skillgrad train`` whose optimizer writes them into
the skill, read back by ``blame``, ``report --html``, the meta skill's epoch boundary and a
resume (each of which failed with "edited or damaged" before).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakes_unicode import RULE
from skillgrad.runs.cache import CallCache, call_key
from skillgrad.runs.io import (
    append_jsonl,
    atomic_write_json,
    atomic_write_text,
    json_line,
    json_objects,
    jsonl_lines,
    read_json,
    read_jsonl,
    read_text,
    write_jsonl,
)
from skillgrad.skill.document import text_lines
from skillgrad.types import ChatRequest, Completion, Message, Score, Trajectory, Usage

BREAKERS = "\u2028\u2029\u0085\x0b\x0c\x1c\x1d\x1e\r\n"
# any code point (surrogates cannot be encoded), with the line breakers made frequent
TEXT = st.text(st.one_of(st.sampled_from(BREAKERS), st.characters(blacklist_categories=("Cs",))))
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(rows=st.lists(JSON, max_size=5))
def test_jsonl_rows_round_trip_one_line_each(tmp_path_factory: Any, rows: list[Any]) -> None:
    folder = tmp_path_factory.mktemp("jsonl")
    written, appended = folder / "written.jsonl", folder / "appended.jsonl"
    write_jsonl(written, rows)
    appended.touch()
    for row in rows:
        append_jsonl(appended, row)
    for path in (written, appended):
        assert read_jsonl(path) == rows
        text = path.read_bytes().decode("utf-8")
        # one line per record for every reader: ours, str.splitlines, and line-oriented tools
        assert len(jsonl_lines(text)) == len(text.splitlines()) == text.count("\n") == len(rows)


@FAST
@given(value=JSON, text=TEXT)
def test_json_and_text_files_round_trip(tmp_path_factory: Any, value: Any, text: str) -> None:
    folder = tmp_path_factory.mktemp("files")
    atomic_write_json(folder / "value.json", value)
    assert read_json(folder / "value.json") == value
    atomic_write_text(folder / "skill.md", text)
    assert read_text(folder / "skill.md") == text  # a '\r' stays a '\r'


@FAST
@given(event=st.dictionaries(TEXT, JSON, max_size=4))
def test_event_streams_split_only_on_newlines(event: dict[str, Any]) -> None:
    stream = json_line(event) + json_line(event) + json_line(event)[:-3]  # a torn last line
    assert json_objects(stream)[:2] == [event, event]
    raw = json.dumps(event, ensure_ascii=False) + "\n"  # another writer: breakers left raw
    assert json_objects(raw) == [event]


@FAST
@given(text=TEXT)
def test_skill_lines_split_on_newlines_only(text: str) -> None:
    assert "\n".join(text_lines(text)) == text.removesuffix("\n")
    assert "".join(text_lines(text, keepends=True)) == text
    assert all("\n" not in line for line in text_lines(text))


@FAST
@given(prompt=TEXT, reply=TEXT, feedback=TEXT)
def test_the_call_cache_round_trips_any_text(
    tmp_path_factory: Any, prompt: str, reply: str, feedback: str
) -> None:
    cache = CallCache(tmp_path_factory.mktemp("cache") / "calls.sqlite")
    try:
        request = ChatRequest(messages=(Message("user", prompt),))
        key = call_key("b", request)
        completion = Completion(text=reply, usage=Usage(3, 4))
        cache.put(key, "b", request, completion, role="target")
        cached = cache.get(key)
        assert cached is not None and cached.text == reply
        traj = Trajectory(
            item_id=prompt[:20] or "i", skill_hash="h", messages=(Message("user", prompt),),
            output=reply, score=Score(0.5, False, feedback),
        )  # fmt: skip
        cache.put_result(traj)
        back = cache.get_result("h", traj.item_id)
        assert back is not None and back.output == reply and back.score.feedback == feedback
    finally:
        cache.close()


FAKES = Path(__file__).parents[1] / "fakes_unicode.py"


def _skillgrad(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skillgrad", *args],
        env=dict(os.environ), capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_a_run_whose_edits_hold_line_breakers_trains_resumes_and_reports(tmp_path: Path) -> None:
    config = tmp_path / "u.yaml"
    config.write_text(
        f"""
train: {{num_epochs: 2, batch_size: 4, patience: 5, use_meta_skill: true,
        stop_at_ceiling: false, examples: off, explore: off}}
models:
  optimizer: {{provider: function, model: "{FAKES}:UnicodeOptimizer"}}
  target: {{provider: function, model: "{FAKES}:ToyTarget"}}
env: {{task: toy, output_root: "{tmp_path / "runs"}", run_name: u}}
""",
        encoding="utf-8",
    )
    trained = _skillgrad("train", str(config))
    assert trained.returncode == 0, trained.stdout[-2000:] + trained.stderr[-2000:]
    run = tmp_path / "runs" / "u"
    assert (run / "meta_skill" / "epoch_02" / "memo.md").exists()  # both epoch boundaries
    assert RULE in read_text(run / "best_skill.md")
    assert [r["edit"]["content"] for r in read_jsonl(run / "patch_log.jsonl")] == [f"- {RULE}"]
    for path in run.rglob("*.jsonl"):  # no raw breaker anywhere a line-oriented tool reads
        assert not set("\u2028\u2029\u0085") & set(path.read_bytes().decode("utf-8")), path
    resumed = _skillgrad("train", str(config))
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    blamed = _skillgrad("blame", "--json", str(run))
    assert blamed.returncode == 0, blamed.stderr
    rows = [json.loads(line) for line in jsonl_lines(blamed.stdout)]
    assert len(rows) == len(text_lines(read_text(run / "best_skill.md")))
    assert any(r["text"] == f"- {RULE}" and r["source"] == "reflect" for r in rows)
    reported = _skillgrad("report", str(run), "--html")
    assert reported.returncode == 0, reported.stderr
    assert "Ünïcödé 🐍" in read_text(run / "report.html")
