"""What reading through the redaction costs: exact reads of the real corpus with
``--redact-secrets off`` and ``on``, in the same run.

Ingests the real logs (``shared/corpus/dsh``) into two data dirs, one per mode, then times
``StoreQueryService.read_event`` (what ``session_event_read`` runs) for every 7th event of
every session with more than 20 events, alone and with a ±50 window, the two dirs
interleaved round by round. Targets are split by kind: a streamed delta chunk is redacted
across its run (``indexer.redact.chunks``: the events around it are read too), any other
target as one event. Prints p50 / p99 per mode and the on/off ratio.

Run: ``.venv/bin/python -m bench.bench_redaction_reads [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from indexer.logs.roots import discover
from indexer.query.service import StoreQueryService
from indexer.redact import Redaction, RedactMode
from indexer.sources.files import ingest_files
from indexer.store.layout import sqlite_path
from indexer.store.records.store import Store
from tests.data_paths import CORPUS_DIR

MODES: tuple[RedactMode, ...] = ("off", "on")


def build(root: Path, mode: RedactMode) -> Path:
    data = root / mode
    store = Store(data, redaction=Redaction(mode))
    try:
        ingest_files(store, discover([CORPUS_DIR]))
    finally:
        store.close()
    return data


def targets(data: Path) -> list[tuple[str, int]]:
    conn = sqlite3.connect(f"file:{sqlite_path(data)}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT id, next_seq FROM sessions WHERE next_seq > 20 ORDER BY id")
        return [(sid, seq) for sid, n in rows.fetchall() for seq in range(0, n, 7)]
    finally:
        conn.close()


def _p(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="sessionq-redaction-reads-"))
    services = {mode: StoreQueryService(build(root, mode)) for mode in MODES}
    calls = targets(root / "off")
    samples: dict[tuple[str, int, str], list[float]] = {}
    for svc in services.values():  # warm up: the rule set loads on the first read
        svc.read_event(*calls[0], before=50, after=50)
    for rnd in range(args.rounds):
        for mode in MODES if rnd % 2 == 0 else tuple(reversed(MODES)):
            svc = services[mode]
            for window in (0, 50):
                for sid, seq in calls:
                    t0 = time.perf_counter()
                    read = svc.read_event(sid, seq, before=window, after=window)
                    took = time.perf_counter() - t0
                    kind = "delta chunk" if read.target.type == "assistant/chunk" else "other"
                    samples.setdefault((mode, window, kind), []).append(took)
    print(f"load average {os.getloadavg()[0]:.2f}; {len(calls)} targets x {args.rounds} rounds")
    head = f"{'window':>7} {'target':<12} {'off p50/p99 ms':>16} {'on p50/p99 ms':>16}"
    print(f"{head} {'p50 on/off':>10}")
    for window in (0, 50):
        for kind in ("other", "delta chunk"):
            off, on = samples[("off", window, kind)], samples[("on", window, kind)]
            figures = f"{_p(off, 0.5):7.3f} /{_p(off, 0.99):7.3f} {_p(on, 0.5):7.3f} /"
            ratio = statistics.median(on) / statistics.median(off)
            print(f"{'±' + str(window):>7} {kind:<12} {figures}{_p(on, 0.99):7.3f} {ratio:>9.2f}x")
    for svc in services.values():
        svc.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
