"""A writer's open batch is bounded by bytes as well as records.

Tantivy bounds its indexing heap itself but keeps every delete a batch staged until the
commit applies it, so a bound by records alone let 300,000 one-line messages peak at
637 MB. The staging counts what a batch holds (``indexer.store.tantivy.staging``) and
every source commits once the store says its batch is full.
"""

from __future__ import annotations

import json
from pathlib import Path

import tantivy

from indexer.logs.importers import discover_sources
from indexer.sources.files import ingest_files
from indexer.store.records.store import Store
from indexer.store.tantivy.staging import DELETE_BYTES, Staging

SID = "ba7c0000-0000-4000-8000-000000000001"


def _one_liners(path: Path, messages: int) -> Path:
    head = {"type": "session", "version": 0, "id": SID, "createdAt": 1, "cwd": "/home/dev/b"}
    lines = [json.dumps(head)]
    for i in range(messages):
        data = {
            "content": [{"type": "text", "text": f"message {i} about widget {i % 97}"}],
            "role": "user",
            "id": f"u{i}",
            "source": {"kind": "user"},
        }
        event = {"type": "user/message", "seq": i, "time": 2 + i, "data": data}
        lines.append(json.dumps({**event, "surfaceOp": "append"}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_staging_counts_text_and_deletes_until_the_batch_ends() -> None:
    staging = Staging()
    staging.add("key", "k1", tantivy.Document(), 100)
    staging.add("", "", tantivy.Document(), 40)  # an add under the session's delete
    mark = staging.mark()
    staging.add("session", "s", None, 0)
    assert staging.pending_bytes == 100 + 40 + 2 * DELETE_BYTES
    staging.rollback_to(mark)  # a record that failed drops its own
    assert staging.pending_bytes == 140 + DELETE_BYTES
    assert len(staging.take()) == 2 and staging.ops == []
    assert staging.pending_bytes == 140 + DELETE_BYTES  # handed over: held until the commit
    staging.clear()
    assert staging.pending_bytes == 0


def test_ingest_commits_when_the_batch_holds_its_bytes_whatever_its_records(
    tmp_path: Path,
) -> None:
    log = _one_liners(tmp_path / "log.jsonl", 6_000)
    sources = discover_sources([log])
    commits = {}
    for bound in (1 << 20, 1 << 30):
        store = Store(tmp_path / f"data-{bound}", batch_bytes=bound)
        try:
            summary = ingest_files(store, sources, commit_every_events=10**9, piece_events=1_000)
            assert store.pending_bytes == 0  # committed at the end
        finally:
            store.close()
        assert summary.events == 6_000 and not summary.rejected
        commits[bound] = summary.commits
    # 6,000 documents after the first piece's, each staging a delete of its own: past
    # 1 MiB every few pieces; a bound of 1 GiB commits once, at the end.
    assert commits[1 << 30] == 1
    assert commits[1 << 20] >= 3, commits
