"""Parallel ingest (``indexer.sources.parallel``) writes what sequential ingest writes,
file for file: the same summary, the same rows, the same index documents, the same tool
outputs — over the real corpus (three invalid logs included), Claude Code and Codex
trees, a repeated file, a file that vanished and a second run over a full store."""

from __future__ import annotations

import hashlib
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
import tantivy

from indexer.logs.importers.detect import LogSource, discover_sources
from indexer.query.service import StoreQueryService
from indexer.sources import parallel as ingest_parallel
from indexer.sources.files import IngestSummary, ingest_files
from indexer.sources.parallel import MIN_FILES, Outcome, PoolStats, _finished, prepare
from indexer.store.blocks.format import Codec
from indexer.store.layout import index_path, sqlite_path
from indexer.store.records.store import Store
from indexer.store.tantivy.schema import stored_text
from tests.data_paths import CLAUDE_CODE_DIR, CODEX_DIR, CORPUS_DIR

TABLES = ("sessions", "blocks", "source_runs", "replacements", "replaced", "dictionaries")
QUERIES = ("the", "error", "session", "tool result", "needle", "的")


@pytest.fixture(autouse=True)
def _pool_for_small_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    """These corpora are smaller than the pool's threshold: use it anyway."""
    monkeypatch.setattr(ingest_parallel, "MIN_BYTES", 0)


def _sources(tmp_path: Path) -> list[Path | LogSource]:
    corpus: list[Path | LogSource] = sorted(CORPUS_DIR.glob("*.jsonl"))
    trees = discover_sources([CLAUDE_CODE_DIR / "projects", CODEX_DIR / "sessions"], None)
    assert trees, "the importer fixtures are missing"
    gone = tmp_path / "vanished.jsonl"  # listed, then removed before it is read
    return [*corpus[:40], corpus[3], gone, *trees, *corpus[40:], corpus[0]]


def _ingest(data: Path, items: Sequence[Path | LogSource], jobs: int) -> IngestSummary:
    store = Store(data)
    try:
        return ingest_files(store, items, jobs=jobs, commit_every_events=5_000)
    finally:
        store.close()


def _summary(s: IngestSummary) -> dict[str, Any]:
    return {
        "files": s.files,
        "sessions": s.sessions,
        "unchanged": s.unchanged,
        "events": s.events,
        "documents": s.documents,
        "rejected": [(str(r.path), r.reason) for r in s.rejected],
        "lost": s.lost,
    }


def _rows(data: Path) -> dict[str, str]:
    conn = sqlite3.connect(sqlite_path(data))
    try:
        out = {}
        for table in TABLES:
            digest = hashlib.sha256()
            for row in conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2"):
                digest.update(repr(row).encode())
            out[table] = digest.hexdigest()
        return out
    finally:
        conn.close()


def _documents(data: Path) -> list[tuple[Any, ...]]:
    index = tantivy.Index.open(str(index_path(data)))
    index.reload()
    searcher = index.searcher()
    hits = searcher.search(tantivy.Query.all_query(), limit=max(1, searcher.num_docs)).hits
    docs = []
    for _score, addr in hits:
        doc = searcher.doc(addr)
        sid = searcher.fast_field_values("sid", [addr])[0]
        docs.append((doc.get_first("meta"), stored_text(doc), sid))
    return sorted(docs)


def _searches(data: Path) -> list[Any]:
    service = StoreQueryService(data)
    try:
        return [repr(service.search_sessions(q, [], [], limit=101)) for q in QUERIES]
    finally:
        service.close()


def test_parallel_ingest_writes_what_sequential_ingest_writes(tmp_path: Path) -> None:
    items = _sources(tmp_path)
    assert len(items) >= MIN_FILES
    seq_dir, par_dir = tmp_path / "sequential", tmp_path / "parallel"
    sequential = _ingest(seq_dir, items, jobs=1)
    parallel = _ingest(par_dir, items, jobs=2)

    assert _summary(parallel) == _summary(sequential)
    assert parallel.worker_cpu_seconds > 0 and sequential.worker_cpu_seconds == 0
    assert parallel.sessions > 150 and parallel.unchanged == 2
    reasons = [r.reason for r in parallel.rejected]
    assert any("vanished.jsonl: cannot read" in r for r in reasons), reasons
    assert _rows(par_dir) == _rows(seq_dir)
    assert _documents(par_dir) == _documents(seq_dir)
    assert _searches(par_dir) == _searches(seq_dir)


def test_a_second_parallel_run_over_a_full_store_changes_nothing(tmp_path: Path) -> None:
    items = sorted(CORPUS_DIR.glob("*.jsonl"))
    data = tmp_path / "data"
    first = _ingest(data, items, jobs=2)
    assert first.worker_cpu_seconds > 0
    rows = _rows(data)
    again = _ingest(data, items, jobs=2)
    assert again.sessions == 0
    assert again.unchanged == first.sessions
    assert [r.reason for r in again.rejected] == [r.reason for r in first.rejected]
    assert _rows(data) == rows


def test_small_inputs_are_read_without_a_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    items: list[Path | LogSource] = sorted(CORPUS_DIR.glob("*.jsonl"))
    assert not ingest_parallel.worth_a_pool(items[: ingest_parallel.MIN_FILES - 1])
    monkeypatch.setattr(ingest_parallel, "MIN_BYTES", 8 << 20)  # the product's threshold
    assert not ingest_parallel.worth_a_pool(items)  # 1.6 MB
    assert ingest_parallel.worth_a_pool(items * 6)


def test_a_worker_rejection_names_the_file_as_the_sequential_reader_does(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type":"session","v":1}\n')
    outcome = prepare(bad, Codec(), 0, 3)
    assert outcome.kind == "rejected"
    assert outcome.reason.startswith(f"{bad}:1: ")


@pytest.mark.parametrize("failure", [RuntimeError("worker died"), KeyboardInterrupt])
def test_a_chunk_whose_worker_failed_is_read_by_the_writer(failure: BaseException | type) -> None:
    future: Future[tuple[list[Outcome], float]] = Future()
    stats = PoolStats()
    if isinstance(failure, BaseException):
        future.set_exception(failure)
        chunk: list[Path | LogSource] = [Path("a.jsonl"), Path("b.jsonl")]
        got = list(_finished(chunk, future, stats))
        assert [(item, o.kind) for item, o in got] == [(p, "local") for p in chunk]
    else:  # an interrupt is not a worker failure: it stops the ingest
        future.set_exception(failure())
        with pytest.raises(KeyboardInterrupt):
            list(_finished([Path("a.jsonl")], future, stats))


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def test_a_killed_ingest_leaves_no_worker_behind(tmp_path: Path) -> None:
    """SIGKILL gives the writer no chance to stop its pool: the workers notice that their
    parent is gone and exit, so nothing keeps the ingest's pipes (or memory) open."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(6):  # over MIN_BYTES, and the workers are still busy when it is killed
        for src in sorted(CORPUS_DIR.glob("*.jsonl")):
            (corpus / f"{i}-{src.name}").write_bytes(
                src.read_bytes().replace(b'"id":"', b'"id":"%d' % i, 1)
            )
    cmd = [sys.executable, "-m", "worker", "ingest", str(corpus), "--data", str(tmp_path / "d")]
    proc = subprocess.Popen(
        [*cmd, "--jobs", "2"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 60
        workers: list[int] = []
        while time.monotonic() < deadline and proc.poll() is None:
            workers = [p for p in _children(proc.pid) if "spawn_main" in _cmdline(p)]
            if len(workers) == 2:
                break
            time.sleep(0.05)
        assert len(workers) == 2, "the pool did not start"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(w) for w in workers):
            time.sleep(0.05)
        assert not [w for w in workers if _alive(w)], "a worker outlived the killed ingest"
    finally:
        if proc.poll() is None:
            proc.kill()


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""
