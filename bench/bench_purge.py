"""How long a purge pass takes on the real corpus (issue 11, "physical purge").

Ingests the 156 valid real session logs (``shared/corpus/dsh``) into a fresh data dir the
way ``sessionq ingest`` does, then, for each case, deletes sessions through the record
path and times the commit (the delete's own commit, then the purge pass it runs: merges
waited for, dirty segments re-indexed and dropped, files collected, WAL truncated).
Two data dirs: ingested in one commit (one segment) and committing every 500 events
(many segments, as a Kafka indexer's batches leave them). Cases: the longest session,
the median one, ten sessions at once. Each case runs on a fresh copy of the ingested
dir, and once more with purging off, so the difference is the pass. Prints one table.

Run: ``.venv/bin/python bench/bench_purge.py [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from indexer.logs.roots import discover
from indexer.model.records import DeleteRecord
from indexer.sources.files import ingest_files
from indexer.store.layout import index_path, sqlite_path
from indexer.store.maintenance.purge import read_segments
from indexer.store.records.store import Store
from tests.data_paths import CORPUS_DIR


def sessions_by_size(data: Path) -> list[str]:
    """Session ids, most events first."""
    conn = sqlite3.connect(f"file:{sqlite_path(data)}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT id FROM sessions ORDER BY next_seq DESC, id").fetchall()
    finally:
        conn.close()
    return [str(r[0]) for r in rows]


def run_case(base: Path, work: Path, ids: list[str], purge: bool) -> tuple[float, str]:
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(base, work)
    store = Store(work, purge_interval_s=0 if purge else None)
    try:
        store.purge_if_due()  # the copy's own first pass (nothing erased yet) is not timed
        started = time.perf_counter()
        for sid in ids:
            store.apply(DeleteRecord(v=1, kind="delete", session_id=sid))
        store.commit()
        seconds = time.perf_counter() - started
        r = store.purger.last if purge else None
        detail = (
            f"{r.segments} segments, {r.sessions} sessions / {r.documents} docs re-indexed"
            if r is not None
            else f"{sum(s.deleted for s in read_segments(index_path(work)))} deleted docs left"
        )
        return seconds, detail
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sessionq-purge-") as tmp:
        print("| data dir | case | delete, no purge | delete + purge pass | pass did |")
        print("|---|---|---|---|---|")
        for commit_every in (200_000, 500):
            base = Path(tmp) / f"base-{commit_every}"
            store = Store(base, purge_interval_s=None)
            summary = ingest_files(store, discover([CORPUS_DIR]), commit_every_events=commit_every)
            store.close()
            layout = (
                f"{summary.files - len(summary.rejected)} sessions, commit every"
                f" {commit_every} events: {len(read_segments(index_path(base)))} segments"
            )
            ranked = sessions_by_size(base)
            cases = {
                "longest session": ranked[:1],
                "median session": ranked[len(ranked) // 2 : len(ranked) // 2 + 1],
                "ten sessions": ranked[::15][:10],
            }
            for name, ids in cases.items():
                work = Path(tmp) / "w"
                plain = [run_case(base, work, ids, False)[0] for _ in range(args.repeat)]
                runs = [run_case(base, work, ids, True) for _ in range(args.repeat)]
                print(
                    f"| {layout} | {name} | {statistics.median(plain) * 1000:.0f} ms"
                    f" | {statistics.median(s for s, _ in runs) * 1000:.0f} ms | {runs[-1][1]} |"
                )


if __name__ == "__main__":
    main()
