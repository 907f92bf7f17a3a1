"""Memory per event: peak RSS and wall time of ``sessionq ingest`` of one long session,
this tree beside a baseline checkout, in one run (see bench/README.md, "Memory per
event").

1. generate one long dsh session per size (``tests.long_session``: user and assistant
   messages, packed ``text-chunks`` rows between chunk markers, tool calls and results,
   step/turn markers, compactions, rewritten tool results, titles), plain ``.jsonl`` and
   ``.jsonl.zstd`` (one frame per turn, as dsh appends them);
2. for each size and format, ``sessionq ingest FILE --data NEW --jobs 1`` in a child
   process, once with this tree's code and once with the baseline's (``--baseline-src``,
   default the 7812bbe checkout at /tmp/base-7812bbe): peak RSS is that child's
   ``ru_maxrss`` (``os.wait4``), wall time its run; the baseline is skipped at a size
   where its RSS, extrapolated from the smaller sizes, would pass ``--baseline-cap-gb``;
3. ``--jobs 2`` over a directory of 64 short logs and the longest one (this tree only:
   the pool's in-flight bound and its fallback to the writer for a long log);
4. the local source (``serve``/``mcp``): the first pass over the longest plain log but
   its last turn, then that turn appended and the pass that reads it (this tree only);
5. print the table (with the load average around each run) and write
   ``bench/out/memory.json``.

Usage: ``python bench/bench_memory.py [--sizes 100000,300000,1000000] [--baseline-src DIR]
[--baseline-cap-gb 12] [--out DIR] [--skip-parallel] [--skip-watch]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):
    sys.path.insert(0, str(ROOT))

from bench.mix import checkout  # noqa: E402

OUT: Final = ROOT / "bench" / "out"
BASELINE: Final = Path("/tmp/base-7812bbe")
SIZES: Final = (100_000, 300_000, 1_000_000)
FORMATS: Final = ("jsonl", "jsonl.zstd")
TARGET_MB: Final = 500


def _loadavg() -> float:
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError):
        return float("nan")


def _available_gb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 2**20
    return float("nan")


class _Peaks(threading.Thread):
    """The peaks of a process's private (``RssAnon``) and file-mapped (``RssFile``)
    resident memory, sampled every 50 ms from ``/proc``: ``ru_maxrss`` counts both, and
    the mapped files are the index's own segment files that Tantivy's merges read
    (page cache the kernel reclaims first, shared with every other reader)."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.anon_kb, self.file_kb = pid, 0, 0
        self._done = threading.Event()

    def run(self) -> None:
        status = Path(f"/proc/{self.pid}/status")
        while not self._done.wait(0.05):
            try:
                fields = dict(line.split(":", 1) for line in status.read_text().splitlines())
            except (OSError, ValueError):
                continue
            self.anon_kb = max(self.anon_kb, int(fields.get("RssAnon", "0 kB").split()[0]))
            self.file_kb = max(self.file_kb, int(fields.get("RssFile", "0 kB").split()[0]))

    def stop(self) -> None:
        self._done.set()
        self.join()


def _measured(cmd: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Run ``cmd`` to its end: its wall time, its peak RSS (its own ``ru_maxrss`` and
    its waited-for children's, from ``wait4``), the load average around it, its output."""
    load0, started = _loadavg(), time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert proc.stdout is not None
    peaks = _Peaks(proc.pid)
    peaks.start()
    output = proc.stdout.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    peaks.stop()
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{output}")
    return {
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
        "peak_private_mb": round(peaks.anon_kb / 1024, 1),
        "peak_mapped_files_mb": round(peaks.file_kb / 1024, 1),
        "wall_s": round(wall, 2),
        "load_before": load0,
        "load_after": _loadavg(),
        "output": output.strip().splitlines()[-3:],
    }


def _env(code: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(code)
    env["SESSIONQ_BENCH_CODE"] = str(code)
    return env


def ingest(code: Path, paths: list[Path], jobs: int) -> dict[str, Any]:
    """``sessionq ingest PATHS --data NEW --jobs JOBS`` with ``code``'s packages."""
    data = Path(tempfile.mkdtemp(prefix="bench-memory-", dir=OUT))
    try:
        cmd = [sys.executable, "-m", "bench.bench_memory", "_ingest", str(data), str(jobs)]
        return _measured([*cmd, *map(str, paths)], _env(code))
    finally:
        shutil.rmtree(data, ignore_errors=True)


def child_ingest(argv: list[str]) -> int:
    """``_ingest DATA JOBS PATH...``: the CLI's ingest with the code on ``sys.path``."""
    code = os.environ["SESSIONQ_BENCH_CODE"]
    sys.path.insert(0, code)
    import indexer
    from worker.cli.main import main

    assert Path(indexer.__file__).is_relative_to(code), indexer.__file__
    data, jobs, *paths = argv
    return main(["ingest", *paths, "--data", data, "--jobs", jobs])


def child_watch(argv: list[str]) -> int:
    """``_watch ROOT DATA LOG APPEND``: the local source's first pass over ROOT, then
    APPEND's bytes appended to LOG and the pass that reads them; prints a JSON line."""
    import resource

    from indexer.logs.watch import WatchRoot
    from indexer.sources.local.applier import Applier, ApplyStatus
    from indexer.sources.loop import RecordLoop
    from indexer.store.records.store import Store

    root, data, log, append = (Path(a) for a in argv)
    store = Store(data)
    status = ApplyStatus()
    applier = Applier(store, RecordLoop(store), [WatchRoot(root)], status, lambda: False)
    started = time.perf_counter()
    applier.first_pass()
    first_s = time.perf_counter() - started
    first_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    applied = status.applied_records
    with log.open("ab") as f:
        f.write(append.read_bytes())
    started = time.perf_counter()
    applier.rescan()
    append_s = time.perf_counter() - started
    store.close()
    print(
        json.dumps(
            {
                "first_pass_s": round(first_s, 2),
                "first_pass_rss_mb": round(first_mb, 1),
                "append_pass_s": round(append_s, 3),
                "records": [applied, status.applied_records - applied],
                "rejected": status.rejected,
            }
        )
    )
    return 0


def generate(out: Path, sizes: list[int]) -> dict[tuple[int, str], Path]:
    from tests.long_session import write_long_session

    logs: dict[tuple[int, str], Path] = {}
    out.mkdir(parents=True, exist_ok=True)
    for n in sizes:
        for fmt in FORMATS:
            path = out / f"long-{n}.{fmt}"
            if not path.exists():
                write_long_session(path.with_suffix(".tmp"), n, zstd=fmt.endswith("zstd"))
                path.with_suffix(".tmp").replace(path)
            logs[(n, fmt)] = path
    return logs


def _fits(rows: list[dict[str, Any]], n: int, fmt: str, cap_gb: float) -> bool:
    """Whether the baseline's RSS at ``n`` events, extrapolated linearly from its two
    largest smaller runs of ``fmt``, stays under ``cap_gb`` and what the machine has."""
    done = sorted(
        (r["events"], r["baseline"]["peak_rss_mb"])
        for r in rows
        if r["format"] == fmt and r.get("baseline")
    )
    if len(done) < 2:
        return True
    (n0, m0), (n1, m1) = done[-2:]
    guess_gb = (m1 + (m1 - m0) * (n - n1) / (n1 - n0)) / 1024
    return guess_gb < min(cap_gb, 0.6 * _available_gb())


def _parallel(out: Path, longest: Path) -> dict[str, Any]:
    from tests.long_session import write_long_session

    corpus = out / "parallel"
    if not corpus.exists():
        corpus.mkdir()
        for i in range(64):
            sid = f"00000000-0000-4000-8000-{i:012d}"
            write_long_session(corpus / f"short-{i:02d}.jsonl", 5_000, seed=i, session_id=sid)
    return ingest(ROOT, [corpus, longest], jobs=2)


def _watch(out: Path, events: int) -> dict[str, Any]:
    from tests.long_session import long_session_turns

    with tempfile.TemporaryDirectory(dir=out) as tmp:
        root = Path(tmp) / "logs"
        root.mkdir()
        log = root / "session.jsonl"
        parts = list(long_session_turns(events))
        log.write_bytes(b"".join(parts[:-1]))
        append = Path(tmp) / "append.jsonl"
        append.write_bytes(parts[-1])  # the last turn
        del parts
        cmd = [sys.executable, "-m", "bench.bench_memory", "_watch", str(root)]
        result = _measured([*cmd, str(Path(tmp) / "data"), str(log), str(append)], _env(ROOT))
    result.update(json.loads(result.pop("output")[-1]))
    return result


def _row(r: dict[str, Any]) -> str:
    this, base = r["this"], r.get("baseline")
    line = f"| {r['events']:>9,} | {r['format']:<10} | {r['file_mb']:>7.1f} |"
    line += f" {this['peak_rss_mb']:>8,.0f} | {this['wall_s']:>7.1f} |"
    if base:
        ratio = base["peak_rss_mb"] / this["peak_rss_mb"]
        line += f" {base['peak_rss_mb']:>8,.0f} | {base['wall_s']:>7.1f} | {ratio:>5.1f}x |"
    else:
        line += " (skipped) |  |  |"
    loads = [this["load_before"], this["load_after"]]
    if base:
        loads += [base["load_before"], base["load_after"]]
    return line + f" {min(loads):.1f}-{max(loads):.1f} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument(
        "--baseline-src", type=checkout, default=BASELINE, help="default: skipped when missing"
    )
    parser.add_argument("--baseline-cap-gb", type=float, default=12.0)
    parser.add_argument("--out", type=Path, default=OUT / "memory")
    parser.add_argument("--skip-parallel", action="store_true")
    parser.add_argument("--skip-watch", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    OUT.mkdir(parents=True, exist_ok=True)
    logs = generate(args.out, sizes)
    base = args.baseline_src if (args.baseline_src / "indexer").is_dir() else None
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    python = platform.python_version()
    print(f"this tree: {head}; baseline: {base}; Python {python}, {os.cpu_count()} cores")
    rows: list[dict[str, Any]] = []
    for n in sizes:
        for fmt in FORMATS:
            path = logs[(n, fmt)]
            row: dict[str, Any] = {"events": n, "format": fmt, "file_mb": path.stat().st_size / 1e6}
            row["this"] = ingest(ROOT, [path], jobs=1)
            if base is not None and _fits(rows, n, fmt, args.baseline_cap_gb):
                row["baseline"] = ingest(base, [path], jobs=1)
            rows.append(row)
            print(_row(row), flush=True)
    results: dict[str, Any] = {"head": head, "baseline": str(base), "ingest": rows}
    longest = logs[(max(sizes), "jsonl")]
    if not args.skip_parallel:
        results["parallel"] = _parallel(args.out, longest)
        print(f"--jobs 2, 64 logs of 5,000 events + {max(sizes):,}: {results['parallel']}")
    if not args.skip_watch:
        results["watch"] = _watch(args.out, max(sizes))
        print(f"local source, {max(sizes):,} events then one appended turn: {results['watch']}")
    (OUT / "memory.json").write_text(json.dumps(results, indent=1))
    print()
    print("| events | format | file MB | this: peak RSS MB | wall s | baseline: peak RSS MB |"
          " wall s | RSS ratio | load |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---|")
    for row in rows:
        print(_row(row))
    worst = max(r["this"]["peak_rss_mb"] for r in rows)
    print(f"\nthis tree's largest peak RSS: {worst:,.0f} MB (target <= {TARGET_MB} MB):"
          f" {'PASS' if worst <= TARGET_MB else 'MISS'}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_ingest":
        sys.exit(child_ingest(sys.argv[2:]))
    if len(sys.argv) > 1 and sys.argv[1] == "_watch":
        sys.exit(child_watch(sys.argv[2:]))
    main()
