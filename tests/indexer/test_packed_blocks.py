"""Blocks built from packed chunk rows equal the blocks of the expanded events, byte for
byte, and a log read packed plans what the expanded log plans (``read_log_packed``,
``plan_packed``, ``packed_block_rows``: the ingest workers' path)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from indexer.logs.reader import LogRejectedError, read_log, read_log_packed
from indexer.model import SessionEvent
from indexer.redact import OFF
from indexer.store.blocks.format import BLOCK_EVENTS, Codec
from indexer.store.blocks.packed import packed_block_rows
from indexer.store.blocks.payload import Payload
from indexer.store.blocks.table import block_rows
from indexer.store.records.plan import plan_events, plan_packed

PLAN_FIELDS = (
    "first_seq",
    "events",
    "last_time",
    "next_seq",
    "nodes",
    "replacements",
    "marks",
    "older_marks",
    "source_runs",
    "title_json",
    "last_step_start",
    "docs",
)


def _both(path: Path) -> tuple[list[Any], list[Any]] | None:
    """(expanded blocks, packed blocks) of one log, after checking the plans agree;
    ``None`` for a log the packed path hands back (no events, or chunk rows only)."""
    log = read_log(path)
    packed = read_log_packed(path)
    assert packed.count == len(log.events)
    if not log.events:
        return None
    plan = plan_events(log.header, log.events, log.fold.steps, log.fold.state, OFF)
    other = plan_packed(packed, OFF)
    if other is None:
        return None
    for name in PLAN_FIELDS:
        assert getattr(other, name) == getattr(plan, name), name
    codec = Codec()
    rows = iter(other.rows)
    items = [next(rows) if isinstance(i, SessionEvent) else i for i in packed.items]
    return block_rows(plan.rows, codec, 0, 3), packed_block_rows(items, codec, 0, 3)


def test_real_corpus_packed_equals_expanded(corpus_dir: Path) -> None:
    """Every real log: the same plan, the same block bytes; a rejected log is rejected
    with the same message."""
    compared = rejected = 0
    for path in sorted(corpus_dir.rglob("*.jsonl*")):
        try:
            read_log(path)
        except LogRejectedError as exc:
            with pytest.raises(LogRejectedError) as packed_exc:
                read_log_packed(path)
            assert str(packed_exc.value) == str(exc)
            rejected += 1
            continue
        both = _both(path)
        if both is not None:
            assert both[0] == both[1], path.name
            compared += 1
    assert compared > 100 and rejected > 0


def _row(
    seq0: int, texts: list[str], *, tag: str = "text-chunks", index: int = 0
) -> dict[str, Any]:
    data: dict[str, Any] = {"turn": 1, "step": 1, "index": index, "dt": [1] * (len(texts) - 1)}
    if tag == "tool-call-chunks":
        data.update(id="call-1", name="run", args=texts)
    else:
        data["texts"] = texts
    return {"type": tag, "seq0": seq0, "time0": 1000 + seq0, "data": data}


def _chunk(seq: int, text: str, index: int = 0) -> dict[str, Any]:
    chunk = {"type": "text-delta", "index": index, "text": text}
    data = {"turn": 1, "step": 1, "chunk": chunk}
    return {"type": "assistant/chunk", "seq": seq, "time": 1000 + seq, "data": data}


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    head = {"type": "session", "version": 0, "id": "s-packed", "createdAt": 1, "cwd": "/w"}
    # ASCII JSON: a lone surrogate is written escaped, as JavaScript writes it
    path.write_text("\n".join(json.dumps(x) for x in [head, *lines]) + "\n")
    return path


def test_edge_rows_pack_as_they_expand(tmp_path: Path) -> None:
    """Deltas ending in ``:`` (they cannot start a run), a lone surrogate (expanded),
    a single chunk line followed by a row of the same head (one run across both),
    another block index (a new run), tool-call rows, a row longer than a block, a row
    of one member, and events between rows."""
    big = [f"w{k}" for k in range(BLOCK_EVENTS + 37)]
    lines: list[dict[str, Any]] = [
        {"type": "turn/start", "seq": 0, "time": 1, "data": {"turn": 1}},
        _row(1, [":", "a:", ":", "b"]),
        _chunk(5, "same head"),
        _row(6, ["x", "y:", "z"]),
        _row(9, ["other", "index"], index=1),
        _row(11, ["lone \ud800 surrogate", "next"]),
        _row(13, ['{"cmd":', '"ls"}'], tag="tool-call-chunks"),
        _row(15, ["one"]),
        {"type": "step/end", "seq": 16, "time": 2, "data": {}},
        _row(17, big),
        _row(17 + len(big), [":", "end:"]),
    ]
    path = _write(tmp_path / "s-packed.jsonl", lines)
    both = _both(path)
    assert both is not None
    expanded, packed = both
    assert packed == expanded
    assert len(packed) >= 2  # the long row crossed a block boundary
    codec = Codec()
    payloads = [(first, Payload(codec.decompress(data, 0))) for first, _, _, data in packed]
    events = [e for first, payload in payloads for e in payload.events(first)]
    assert [e.raw for e in events] == [e.raw for e in read_log(path).events]


def test_a_packed_log_is_rejected_as_the_expanded_one(tmp_path: Path) -> None:
    """A row that breaks contiguity and a malformed row: the same line and message."""
    gap = _write(tmp_path / "gap.jsonl", [_row(0, ["a", "b"]), _row(5, ["c"])])
    bad = _write(tmp_path / "bad.jsonl", [_row(0, ["a"]) | {"extra": 1}])
    for path in (gap, bad):
        with pytest.raises(LogRejectedError) as expanded:
            read_log(path)
        with pytest.raises(LogRejectedError) as packed:
            read_log_packed(path)
        assert str(packed.value) == str(expanded.value)
