"""Peak RSS of ``sessionq ingest`` of one long log of every format, this tree beside a
baseline checkout, in one run (bench/README.md, "Memory by bytes, every format").

1. write one log of each format (``bench.format_logs``: dsh, Claude Code, Codex, Gemini
   CLI's ``.json`` document and ``.jsonl`` chat, Copilot CLI, OpenCode's storage) at
   each size in ``--sizes`` (MiB), and the dsh session of 300,000 one-line user messages
   (each its own index document: the case a bound by records missed);
2. ``sessionq ingest LOG --data NEW --jobs 1`` in a child process with this tree's code
   and with the baseline's (``--baseline-src``, a checkout of 970ce9a): peak RSS is the
   child's ``ru_maxrss``, wall time its run. The baseline is not run at a size where its
   RSS, extrapolated from its two smaller runs of the format, would pass
   ``--baseline-cap-gb`` (it grew with the log: 8 GB for a 126 MB Gemini chat);
3. print the table (target: this tree ≤ 400 MB for every log) and write
   ``bench/out/memory_formats.json``. Beside the peak RSS (``ru_maxrss``) goes the peak of
   its private part (``RssAnon``, sampled): the rest is file pages mapped by Tantivy's
   segment merges (``bench_memory._Peaks``).

Usage: ``python bench/bench_memory_formats.py [--sizes 64,256,1024] [--baseline-src DIR]
[--baseline-cap-gb 10] [--formats dsh,claude-code,...] [--out DIR]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):
    sys.path.insert(0, str(ROOT))

from bench.bench_memory import ingest  # noqa: E402
from bench.format_logs import FORMATS, ONE_LINERS, write_format_log, write_one_liners  # noqa: E402
from bench.mix import checkout  # noqa: E402

OUT: Final = ROOT / "bench" / "out"
BASELINE: Final = Path("/tmp/base970")
SIZES_MIB: Final = (64, 256, 1024)
TARGET_MB: Final = 400


def _size_of(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _logs(out: Path, formats: list[str], sizes: list[int]) -> list[tuple[str, int, Path]]:
    """``(format, MiB, path)`` of every log, written once (kept between runs)."""
    logs: list[tuple[str, int, Path]] = []
    for fmt in formats:
        for mib in sizes:
            root = out / "logs" / f"{fmt}-{mib}"
            done = root / ".path"
            if not done.exists():
                shutil.rmtree(root, ignore_errors=True)
                path = write_format_log(fmt, root, mib << 20)
                done.write_text(str(path))
            logs.append((fmt, mib, Path(done.read_text())))
    one_liners = out / "logs" / f"{ONE_LINERS}.jsonl"
    if not one_liners.exists():
        one_liners.parent.mkdir(parents=True, exist_ok=True)
        write_one_liners(one_liners.with_suffix(".tmp"))
        one_liners.with_suffix(".tmp").replace(one_liners)
    logs.append((ONE_LINERS, 0, one_liners))
    return logs


def _fits(rows: list[dict[str, Any]], fmt: str, mib: int, cap_gb: float) -> bool:
    """Whether the baseline's RSS at ``mib``, extrapolated linearly from its two largest
    smaller runs of ``fmt``, stays under ``cap_gb``."""
    done = sorted(
        (r["mib"], r["baseline"]["peak_rss_mb"])
        for r in rows
        if r["format"] == fmt and r.get("baseline")
    )
    if len(done) < 2:
        return mib <= 256 or not done or done[-1][1] * mib / done[-1][0] < cap_gb * 1024
    (n0, m0), (n1, m1) = done[-2:]
    return (m1 + (m1 - m0) * (mib - n1) / (n1 - n0)) / 1024 < cap_gb


def _row(r: dict[str, Any]) -> str:
    this, base = r["this"], r.get("baseline")
    ok = "yes" if this["peak_rss_mb"] <= TARGET_MB else "NO"
    private = this.get("peak_private_mb", float("nan"))
    line = f"| {r['format']:<27} | {r['file_mb']:>8,.1f} | {this['peak_rss_mb']:>7,.0f} |"
    line += f" {private:>7,.0f} | {this['wall_s']:>7.1f} | {ok:>3} |"
    if base:
        line += f" {base['peak_rss_mb']:>8,.0f} | {base['wall_s']:>7.1f} |"
    else:
        line += f" {r.get('baseline_note', 'not run'):>18} | |"
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES_MIB)), help="MiB")
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--baseline-src", type=checkout, default=None, help="a checkout of 970ce9a")
    parser.add_argument("--baseline-cap-gb", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=OUT / "memory_formats")
    args = parser.parse_args()
    baseline: Path | None = args.baseline_src
    if baseline is None and BASELINE.is_dir():
        baseline = checkout(str(BASELINE))
    sizes = sorted(int(s) for s in args.sizes.split(","))
    formats = [f for f in args.formats.split(",") if f]
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        parser.error(f"unknown formats: {', '.join(unknown)} (known: {', '.join(FORMATS)})")
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    for fmt, mib, path in _logs(args.out, formats, sizes):
        row: dict[str, Any] = {"format": fmt, "mib": mib, "file_mb": _size_of(path) / 1e6}
        if fmt == ONE_LINERS:
            row["format"] = "dsh, 300,000 one-line msgs"
        row["this"] = ingest(ROOT, [path], jobs=1)
        if baseline is not None and _fits(rows, fmt, mib, args.baseline_cap_gb):
            try:
                row["baseline"] = ingest(baseline, [path], jobs=1)
            except RuntimeError as exc:  # the baseline refused the log (exit 1)
                row["baseline_note"] = "refused: " + str(exc).strip().splitlines()[-1][-60:]
        elif baseline is not None:
            row["baseline_note"] = f"over {args.baseline_cap_gb:g} GB"
        for side in ("this", "baseline"):
            if side in row:
                row[side].pop("output", None)
        rows.append(row)
        print(_row(row), flush=True)
    header = (
        f"| log | MB | peak RSS MB | of it private MB | wall s | RSS ≤{TARGET_MB} |"
        f" {'baseline' if baseline else '(no baseline)'} RSS MB | wall s |"
    )
    print(f"\n{platform.node()} · {os.cpu_count()} CPUs · Python {platform.python_version()}")
    print(header)
    print("|---|---:|---:|---:|---:|:---:|---:|---:|")
    for row in rows:
        print(_row(row))
    (OUT / "memory_formats.json").write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
