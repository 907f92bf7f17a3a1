"""A writer's open batch is bounded by bytes as well as records.

Tantivy bounds its indexing heap itself but keeps every delete a batch staged until the
commit applies it, so a bound by records alone let 300,000 one-line messages peak at
637 MB. The staging counts what a batch holds (``indexer.store.tantivy.staging``) and
every source commits once the store says its batch is full.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import tantivy

from indexer.logs.importers import discover_sources
from indexer.sources.files import ingest_files
from indexer.store.records.store import Store
from indexer.store.tantivy.staging import DELETE_BYTES, QUERY, Staging
from tests.data_paths import REPO_ROOT

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


def test_the_staging_counts_what_tantivy_holds_until_the_batch_ends() -> None:
    staging = Staging()
    staging.add("key", "k1", tantivy.Document())  # a delete by key, then an add
    staging.add("", "", tantivy.Document())  # an add under an earlier delete
    mark = staging.mark()
    staging.add(QUERY, tantivy.Query.all_query(), None)
    assert staging.pending_bytes == 2 * DELETE_BYTES
    staging.rollback_to(mark)  # a record that failed drops its own
    assert staging.pending_bytes == DELETE_BYTES
    assert len(staging.take()) == 2 and staging.ops == []
    assert staging.pending_bytes == DELETE_BYTES  # handed over: held until the commit
    staging.clear()
    assert staging.pending_bytes == 0


def test_ingest_commits_when_the_batch_holds_its_bytes_whatever_its_records(
    tmp_path: Path,
) -> None:
    log = _one_liners(tmp_path / "log.jsonl", 6_000)
    sources = discover_sources([log])
    commits = {}
    # Each piece after the first deletes its events' seq range once: a bound of three
    # deletes is passed every few pieces; a bound of 1 GiB commits once, at the end.
    for bound in (3 * DELETE_BYTES, 1 << 30):
        store = Store(tmp_path / f"data-{bound}", batch_bytes=bound)
        try:
            summary = ingest_files(store, sources, commit_every_events=10**9, piece_events=1_000)
            assert store.pending_bytes == 0  # committed at the end
        finally:
            store.close()
        assert summary.events == 6_000 and not summary.rejected
        commits[bound] = summary.commits
    assert commits[1 << 30] == 1
    assert commits[3 * DELETE_BYTES] >= 2, commits


def test_a_later_piece_deletes_what_a_crash_left_in_its_seq_range(tmp_path: Path) -> None:
    """A crash between the index's commit and the tables' leaves documents at seqs the
    tables lack; re-applied, a later piece's one range delete removes them before its
    own are added (as a delete per document did): every event is indexed once."""
    log = _one_liners(tmp_path / "log.jsonl", 25_000)  # three pieces
    data = tmp_path / "data"
    argv = [sys.executable, "-m", "worker", "ingest", str(log), "--data", str(data)]
    argv += ["--commit-every", "10000", "--jobs", "1"]  # a commit after each piece
    env = {**os.environ, "SESSIONQ_FAILPOINT": "after-index-commit:2"}
    crashed = subprocess.run(argv, env=env, cwd=REPO_ROOT, capture_output=True, timeout=300)
    assert crashed.returncode == 137, crashed.stderr  # killed between the two commits
    store = Store(data)
    try:
        state = store.tables.session_state(SID)
        assert state is not None and state.next_seq == 10_000  # the tables: one piece
        assert store.index.num_docs() == 20_000  # the index: two
        ingest_files(store, discover_sources([log]))
        assert store.index.num_docs() == 25_000
    finally:
        store.close()
