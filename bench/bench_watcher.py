"""What watching logs costs: ``sessionq serve`` idle CPU, and how soon a new or appended
log is searchable, for 100, 1,000 and 10,000 watched logs, this tree beside another
checkout (``--baseline-src``, e.g. 7812bbe's polling watcher) in the same run.

For each size a demo corpus (``sessionq demo-corpus``) is written once; for each side a
real ``serve`` process (its code imported from that side's checkout) ingests it into a
fresh data dir, then:

* **idle CPU** — the process's own CPU time (``/proc/<pid>/stat``) over ``--idle-s``
  seconds of nothing changing, as % of one core;
* **latency** — ``--appends`` appends to existing logs and ``--new`` new logs, one at a
  time, each with a word nobody else has: the time from the write until
  ``session_search`` (``POST /v1/call``, from a session of the same workspace) finds it,
  polled every 10 ms. p50 and p99 per side.

Targets (issue 18): idle CPU ≤ 1 % of a core and p99 ≤ 1 s at every size.

Run: ``.venv/bin/python bench/bench_watcher.py --baseline-src /tmp/base-7812bbe``
(``git worktree add /tmp/base-7812bbe 7812bbe``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.mix import checkout  # noqa: E402
from worker.devtools.demo_corpus import DemoSummary, write_demo_corpus  # noqa: E402

TICKS: Final = os.sysconf("SC_CLK_TCK")
SERVE: Final = (
    "import sys; sys.path.insert(0, sys.argv[1]); sys.argv = ['sessionq', *sys.argv[2:]];"
    " from worker.cli.main import main; sys.exit(main(sys.argv[1:]))"
)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def post(base: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{base}/v1/call", json.dumps(body).encode(), {"content-type": "application/json"}
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=30) as response:
        reply: dict[str, Any] = json.load(response)
        return reply


class Served:
    """One ``serve`` process of one side over one corpus."""

    def __init__(self, code: Path, sessions: Path, data: Path) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                SERVE,
                str(code),
                "serve",
                "--sessions",
                str(sessions),
                "--data",
                str(data),
                "--listen",
                "127.0.0.1:0",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={k: v for k, v in os.environ.items() if not k.startswith("SESSIONQ_")},
        )
        assert self.proc.stderr is not None and self.proc.stdout is not None
        line = ""
        while "serving on" not in line:
            line = self.proc.stderr.readline()
            if not line and self.proc.poll() is not None:
                raise RuntimeError("serve ended before it listened")
        self.base = line.split("serving on ", 1)[1].split()[0]
        started = time.perf_counter()
        ready = self.proc.stdout.readline()
        if not ready.startswith("ready"):
            raise RuntimeError(f"serve did not get ready: {ready!r}")
        self.ingest_s = time.perf_counter() - started

    def found(self, caller: str, word: str, sid: str) -> bool:
        reply = post(
            self.base,
            {
                "tool": "session_search",
                "arguments": {"query": word},
                "caller": {"session_id": caller},
            },
        )
        return bool(reply.get("ok")) and sid in str(reply.get("text", ""))

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def idle_cpu(served: Served, seconds: float) -> float:
    time.sleep(2.0)  # let the first pass's follow-up work settle
    before, t0 = cpu_seconds(served.proc.pid), time.perf_counter()
    time.sleep(seconds)
    return 100.0 * (cpu_seconds(served.proc.pid) - before) / (time.perf_counter() - t0)


def _event(seq: int, word: str) -> str:
    return json.dumps(
        {
            "type": "user/message",
            "seq": seq,
            "time": 1_790_000_000_000 + seq,
            "data": {
                "content": [{"type": "text", "text": f"benchmark note {word}"}],
                "source": {"kind": "user"},
                "role": "user",
                "id": f"bench-{word}",
            },
            "surfaceOp": "append",
        }
    )


def _found_after(served: Served, caller: str, word: str, sid: str, written: float) -> float:
    """Seconds from ``written`` until the search finds the word (inf after a minute)."""
    while not served.found(caller, word, sid):
        if time.perf_counter() - written > 60.0:
            return float("inf")
        time.sleep(0.01)
    return time.perf_counter() - written


def latencies(served: Served, demo: DemoSummary, appends: int, new: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    by_cwd: dict[str, list[Any]] = {}
    for s in demo.sessions:
        if s.cwd is not None and not s.subagent:
            by_cwd.setdefault(s.cwd, []).append(s)
    workspaces = [w for w, members in by_cwd.items() if len(members) >= 2]
    out: list[float] = []
    for i in range(appends):
        members = by_cwd[rng.choice(workspaces)]
        target, caller = rng.sample(members, 2)
        path = demo.root / target.path
        lines = path.read_text().splitlines()
        seq = json.loads(lines[-1])["seq"] + 1
        word = f"zq{seed}a{i}x{rng.randrange(10**9)}"
        written = time.perf_counter()
        with path.open("a") as f:
            f.write(_event(seq, word) + "\n")
        out.append(_found_after(served, caller.id, word, target.id, written))
    for i in range(new):
        members = by_cwd[rng.choice(workspaces)]
        template, caller = rng.sample(members, 2)
        source = demo.root / template.path
        header = json.loads(source.read_text().splitlines()[0])
        sid = f"bench-{seed}-{i}-{rng.randrange(10**9)}"
        header["id"] = sid
        word = f"zq{seed}n{i}x{rng.randrange(10**9)}"
        target = demo.root / f"bench-{sid}.jsonl"
        tmp = target.with_suffix(".tmp")
        tmp.write_text(json.dumps(header) + "\n" + _event(0, word) + "\n")
        written = time.perf_counter()
        tmp.rename(target)
        out.append(_found_after(served, caller.id, word, sid, written))
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--baseline-src", type=checkout, default=None)
    parser.add_argument("--idle-s", type=float, default=20.0)
    parser.add_argument("--appends", type=int, default=40)
    parser.add_argument("--new", type=int, default=10)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "watcher.json")
    args = parser.parse_args()
    sides = [("now", ROOT)]
    if args.baseline_src is not None:
        sides.insert(0, ("baseline", args.baseline_src.resolve()))
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}", flush=True)
    results: list[dict[str, Any]] = []
    work = Path(tempfile.mkdtemp(prefix="bench-watcher-"))
    try:
        for size in (int(s) for s in args.sizes.split(",")):
            for side, code in sides:
                corpus = work / f"demo-{size}-{side}"
                demo = write_demo_corpus(corpus, size, seed=11)
                served = Served(code, demo.root, work / f"data-{size}-{side}")
                try:
                    idle = idle_cpu(served, args.idle_s)
                    lat = latencies(served, demo, args.appends, args.new, seed=size)
                finally:
                    served.stop()
                row = {
                    "files": size,
                    "side": side,
                    "first_ingest_s": round(served.ingest_s, 1),
                    "idle_cpu_pct": round(idle, 2),
                    "p50_ms": round(1000 * pct(lat, 0.5), 1),
                    "p99_ms": round(1000 * pct(lat, 0.99), 1),
                    "load": round(os.getloadavg()[0], 2),
                }
                results.append(row)
                print(json.dumps(row), flush=True)
                shutil.rmtree(corpus, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print()
    print("| watched logs | side | idle CPU (% of a core) | searchable p50 | p99 | first ingest |")
    print("|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['files']:,} | {r['side']} | {r['idle_cpu_pct']:.2f} | {r['p50_ms']:.0f} ms"
            f" | {r['p99_ms']:.0f} ms | {r['first_ingest_s']} s |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
