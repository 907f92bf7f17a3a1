"""Any agent's log read in pieces is the same log: the pieces' events, joined, are the
events of the log read whole (numbers, times, titles, steps), every piece carries the
same header, and each piece's fold starts where the one before ended. A header that is
not settled when the first piece is full (a Claude Code log without a ``cwd`` until its
last record) comes from a reading of the whole log."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from indexer.logs.importers.detect import LogSource, detect_file, read_source, read_source_pieces
from tests.importers.agent_logs import WRITERS, Turn

TURNS: list[Turn] = [
    (kind, f"{kind} number {i} about pieces")
    for i in range(12)
    for kind in ("user", "thinking", "assistant", "call", "result")
]


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_a_log_in_pieces_is_the_log_read_whole(tmp_path: Path, fmt: str) -> None:
    path = WRITERS[fmt](tmp_path / fmt, TURNS, "9e1e0000-0000-4000-8000-000000000001")
    source = LogSource(path, detect_file(path))
    whole = read_source(source)
    pieces = list(read_source_pieces(source, max_events=7))
    assert len(pieces) > 3
    assert [p.final for p in pieces] == [False] * (len(pieces) - 1) + [True]
    assert all(p.header == whole.header for p in pieces)
    assert [e.raw for p in pieces for e in p.events] == [e.raw for e in whole.events]
    assert pieces[0].fold is not None and pieces[0].fold.start == 0
    for before, after in itertools.pairwise(pieces):
        assert before.fold is not None and after.fold is not None
        assert after.fold.start == before.fold.start + len(before.events)
        assert after.fold.start_nodes == before.fold.state.nodes


def test_a_header_settled_only_by_the_last_record_comes_from_a_whole_reading(
    tmp_path: Path,
) -> None:
    sid = "9e1e0000-0000-4000-8000-000000000002"
    project = tmp_path / "projects" / "-home-dev-late"
    project.mkdir(parents=True)
    records = [
        {
            "type": "user",
            "sessionId": sid,
            "uuid": f"u{i}",
            "timestamp": f"2025-11-10T10:00:{i:02d}.000Z",
            "message": {"role": "user", "content": f"prompt {i}"},
        }
        for i in range(30)
    ]
    records[-1]["cwd"] = "/home/dev/late"  # the only record that names the cwd
    path = project / f"{sid}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    source = LogSource(path, "claude-code")
    pieces = list(read_source_pieces(source, max_events=5))
    assert len(pieces) > 2
    assert {p.header.cwd for p in pieces} == {"/home/dev/late"}
    assert [e.raw for p in pieces for e in p.events] == [e.raw for e in read_source(source).events]
