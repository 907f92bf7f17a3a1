"""Start-up time of one-shot ``sessionq`` commands, this tree beside another checkout
(``--baseline-src``, e.g. 7812bbe) in the same run.

Each side's commands run as real processes of this interpreter with a copy of that side's
``indexer`` and ``worker`` packages first on ``sys.path`` (``sessionq_argv``; the copies
keep the checkouts free of bytecode caches). Each side gets its own data dir, ingested
from ``--corpus`` (``shared/corpus/dsh``) by its own code. The commands:

* ``--help``;
* ``call session_trace`` and ``call session_search`` with ``--data`` (one tool call,
  in-process, as a caller of the workspace holding the most sessions);
* ``stats --data`` and ``manifest``.

Two bytecode modes, each side with its own copy per mode:

* ``cached`` — what an installed package sees: the packages' ``.pyc`` files are written
  by an unmeasured warm-up run (which also warms the page cache), then read;
* ``source`` — the packages compiled from source on every run, as in a checkout under
  ``PYTHONDONTWRITEBYTECODE=1`` (the standard library and the dependencies keep their
  caches): each module imported costs its compile too.

Then ``--runs`` rounds, each running every command on both sides in both modes, the side
order alternating per round, so load drifts hit both alike. The figures are the wall time
of the whole process, from spawn to exit, and its CPU time (user + system, from the
children's resource usage): on a loaded machine the wall time stretches with the load,
the CPU time much less. Each call's output is compared between the sides (same corpus,
same reply expected).

Targets (issue 22): ``--help`` ≤ 0.3 s, ``call --data`` ≤ 0.6 s wall (median).

Run: ``nice .venv/bin/python bench/bench_startup.py --baseline-src /tmp/base-7812bbe``
(``git worktree add /tmp/base-7812bbe 7812bbe``). JSON: ``bench/out/startup.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):
    sys.path.insert(0, str(ROOT))

from bench.mix import checkout  # noqa: E402

PACKAGES: Final = ("indexer", "worker")
MODES: Final = ("cached", "source")
TARGETS_S: Final = {"--help": 0.3, "call session_trace": 0.6, "call session_search": 0.6}
COMPARED: Final = ("call session_trace", "call session_search", "manifest")
QUERY: Final = "error"


def sessionq_argv(src: Path) -> list[str]:
    """The command line of ``sessionq`` from ``src`` (a directory holding the packages),
    run by this interpreter with ``src`` first on ``sys.path`` so its packages win."""
    code = (
        f"import sys; sys.path.insert(0, {str(src)!r}); sys.argv[0] = 'sessionq'; "
        "from worker.cli.main import main; sys.exit(main())"
    )
    return [sys.executable, "-c", code]


def child_env(mode: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k != "PYTHONDONTWRITEBYTECODE" and not k.startswith("SESSIONQ_")
    }
    if mode == "source":
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


@dataclass
class Side:
    name: str
    checkout: Path
    work: Path
    walls: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    cpus: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    outputs: dict[str, bytes] = field(default_factory=dict)

    @property
    def data(self) -> Path:
        return self.work / "data"

    def code(self, mode: str) -> Path:
        return self.work / mode

    def copy_packages(self) -> None:
        for mode in MODES:
            for package in PACKAGES:
                shutil.copytree(
                    self.checkout / package,
                    self.code(mode) / package,
                    ignore=shutil.ignore_patterns("__pycache__"),
                )


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(side: Side, mode: str, args: list[str]) -> tuple[float, float, bytes]:
    """Wall and CPU seconds of one ``sessionq ARGS`` process (the children run one at a
    time, so the children's usage grows by this one's), and its output."""
    cpu = children_cpu()
    started = time.perf_counter()
    done = subprocess.run(
        [*sessionq_argv(side.code(mode)), *args],
        capture_output=True,
        env=child_env(mode),
        check=False,
    )
    wall = time.perf_counter() - started
    cpu = children_cpu() - cpu
    if done.returncode != 0:
        raise SystemExit(
            f"{side.name}: sessionq {' '.join(args)} exited {done.returncode}:\n"
            + done.stderr.decode(errors="replace")[-2000:]
        )
    return wall, cpu, done.stdout


def imported_from(side: Side, mode: str) -> str:
    """Where the side's ``worker`` package is imported from (the sys.path order holds)."""
    probe = f"import sys; sys.path.insert(0, {str(side.code(mode))!r}); import worker"
    out = subprocess.run(
        [sys.executable, "-c", probe + "; print(worker.__file__)"],
        capture_output=True,
        env=child_env("source"),
        check=True,
    )
    return out.stdout.decode().strip()


def pick_sessions(db: Path) -> tuple[str, str]:
    """A caller in the workspace holding the most sessions with events, and another
    session of that workspace (the trace's target)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        row = conn.execute(
            "SELECT cwd, group_concat(id) FROM (SELECT id, cwd FROM sessions"
            " WHERE cwd IS NOT NULL AND next_seq > 0 ORDER BY id) GROUP BY cwd"
            " ORDER BY count(*) DESC, cwd LIMIT 1"
        ).fetchone()
    finally:
        conn.close()
    ids = str(row[1]).split(",")
    return ids[0], ids[1]


def commands(side: Side, caller: str, target: str) -> dict[str, list[str]]:
    data = ["--data", str(side.data)]
    call = ["--caller", caller, *data]
    return {
        "--help": ["--help"],
        "call session_trace": ["call", "session_trace", json.dumps({"session_id": target}), *call],
        "call session_search": ["call", "session_search", json.dumps({"query": QUERY}), *call],
        "stats": ["stats", *data],
        "manifest": ["manifest"],
    }


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def figures(side: Side, mode: str, name: str) -> dict[str, Any]:
    walls, cpus = side.walls[mode][name], side.cpus[mode][name]
    return {
        "p50_s": statistics.median(walls),
        "p90_s": pct(walls, 0.9),
        "cpu_p50_s": statistics.median(cpus),
        "walls_s": walls,
        "cpus_s": cpus,
    }


def report(sides: list[Side], mode: str) -> dict[str, Any]:
    """One table per bytecode mode: wall p50/p90 and CPU p50 per side, the ratios of
    the p50s (this / baseline), the wall target and whether this side's p50 meets it."""
    this = sides[0]
    base = sides[1] if len(sides) > 1 else None
    head = f"{mode + ' bytecode':<20} {'wall p50':>8} {'p90':>6} {'cpu p50':>7}"
    if base is not None:
        head += f" | {'base p50':>8} {'p90':>6} {'cpu p50':>7} | {'wall ×':>6} {'cpu ×':>6}"
    print(head + f" | {'target':>6}  met")
    rows: dict[str, Any] = {}
    for name in this.walls[mode]:
        mine = figures(this, mode, name)
        row: dict[str, Any] = {"this": mine}
        line = f"{name:<20} {mine['p50_s']:>8.3f} {mine['p90_s']:>6.3f} {mine['cpu_p50_s']:>7.3f}"
        note = ""
        if base is not None:
            theirs = figures(base, mode, name)
            row["baseline"] = theirs
            row["ratio_p50"] = mine["p50_s"] / theirs["p50_s"]
            row["ratio_cpu_p50"] = mine["cpu_p50_s"] / theirs["cpu_p50_s"]
            line += (
                f" | {theirs['p50_s']:>8.3f} {theirs['p90_s']:>6.3f} {theirs['cpu_p50_s']:>7.3f}"
                f" | {row['ratio_p50']:>6.2f} {row['ratio_cpu_p50']:>6.2f}"
            )
            if name in COMPARED:
                row["same_output"] = this.outputs[name] == base.outputs[name]
                note = "" if row["same_output"] else "  (output differs from the baseline's)"
        target = TARGETS_S.get(name)
        row["target_s"] = target
        met = "" if target is None else ("yes" if mine["p50_s"] <= target else "NO")
        line += f" | {'' if target is None else f'{target:.1f}s':>6}  {met}{note}"
        print(line)
        rows[name] = row
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-src", type=checkout, default=None)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus" / "dsh")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "startup.json")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    sides = [Side("this", ROOT, work / "this")]
    if args.baseline_src is not None:
        sides.append(Side("baseline", args.baseline_src.resolve(), work / "baseline"))
    load_before = os.getloadavg()[0]
    try:
        for side in sides:
            side.copy_packages()
            print(f"{side.name}: {side.checkout} ({imported_from(side, 'source')})", flush=True)
            run(side, "cached", ["ingest", str(args.corpus), "--data", str(side.data)])
        caller, target = pick_sessions(sides[0].data / "store.sqlite3")
        print(f"caller {caller}, trace of {target}, search {QUERY!r}", flush=True)
        per_side = {side.name: commands(side, caller, target) for side in sides}
        names = list(per_side[sides[0].name])
        for side in sides:  # warm-up: bytecode caches (cached mode), page cache
            for mode in MODES:
                side.walls[mode] = {name: [] for name in names}
                side.cpus[mode] = {name: [] for name in names}
                for name in names:
                    side.outputs[name] = run(side, mode, per_side[side.name][name])[2]
        for i in range(args.runs):
            order = sides if i % 2 == 0 else sides[::-1]
            for mode in MODES:
                for name in names:
                    for side in order:
                        wall, cpu, _ = run(side, mode, per_side[side.name][name])
                        side.walls[mode][name].append(wall)
                        side.cpus[mode][name].append(cpu)
        load_after = os.getloadavg()[0]
        rows = {mode: report(sides, mode) for mode in MODES}
        print(
            f"load average {load_before:.2f} before, {load_after:.2f} after; {os.cpu_count()} cores"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    result = {
        "cores": os.cpu_count(),
        "load_before": load_before,
        "load_after": load_after,
        "runs": args.runs,
        "baseline_src": None if args.baseline_src is None else str(args.baseline_src),
        "modes": rows,
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
