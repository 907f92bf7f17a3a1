"""What each agent window costs: ``sessionq mcp`` started once per window, this tree beside
a baseline checkout, in one run.

An agent starts one stdio MCP server per window. Here ``--windows`` of them are started
one after another over one data dir (the real corpus, ``shared/corpus/dsh``, ingested by
each side's own ``sessionq ingest``), each driven by a raw JSON-RPC client over its pipes:
``initialize`` (timed from the spawn to its answer), ``notifications/initialized``, one
``session_search`` (timed; checked to answer). Once every window has answered, the
resident set (``VmRSS``) of every process serving them is read: on this tree the windows'
thin fronts and the one daemon they share, on the baseline one whole server per window.

Printed per side: the first window's initialize (this tree: it starts the daemon), the
median initialize of the others, the RSS each additional window adds (its own process;
the daemon's growth included), the RSS of all of them, and the call's median latency.

Run: ``.venv/bin/python bench/bench_mcp_windows.py [--baseline-src DIR] [--windows 5]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_store import machine
from bench.mix import checkout, sessionq_argv

REPO: Final = Path(__file__).resolve().parents[1]
CORPUS: Final = REPO.parent / "shared" / "corpus" / "dsh"
CALLER: Final = "85e6db1b-b2a5-5fb3-b045-5a0a2addb250"
WORKSPACE: Final = "/home/dev/acp-agent"
INITIALIZE: Final = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "bench_mcp_windows", "version": "1"}},
}  # fmt: skip
INITIALIZED: Final = {"jsonrpc": "2.0", "method": "notifications/initialized"}
SEARCH: Final = {
    "jsonrpc": "2.0", "id": 2, "method": "tools/call",
    "params": {"name": "session_search", "arguments": {"query": "PONG"}},
}  # fmt: skip


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def daemons_of(data: Path) -> list[int]:
    """Pids of the MCP daemons serving ``data`` (this tree's shared process)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "mcp_daemon" in cmdline and str(data) in cmdline:
            found.append(int(entry.name))
    return found


class Window:
    """One ``sessionq mcp`` as an agent window starts it, spoken to over its pipes."""

    def __init__(self, src: Path | None, data: Path, env: dict[str, str]) -> None:
        argv = [*sessionq_argv(src), "mcp", "--data", str(data), "--caller", CALLER]
        started = time.perf_counter()
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env, cwd=WORKSPACE if Path(WORKSPACE).is_dir() else None,
        )  # fmt: skip
        self.ask(INITIALIZE)
        self.init_s = time.perf_counter() - started
        self.send(INITIALIZED)
        started = time.perf_counter()
        reply = self.ask(SEARCH)
        self.call_s = time.perf_counter() - started
        text = reply["result"]["content"][0]["text"]
        if reply["result"].get("isError") or "Session search results" not in text:
            raise SystemExit(f"the window's search failed: {text[:200]}")

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        self.send(message)
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit(f"the window ended before answering {message['method']}")
            reply: dict[str, Any] = json.loads(line)
            if reply.get("id") == message["id"]:
                return reply

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def run_side(name: str, src: Path | None, windows: int, work: Path) -> dict[str, float]:
    data = work / f"data-{name.replace(' ', '-')}"
    subprocess.run([*sessionq_argv(src), "ingest", str(CORPUS), "--data", str(data)],
                   check=True, capture_output=True)  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONQ_")}
    env.pop("CLAUDE_CODE_SESSION_ID", None)
    env["SESSIONQ_DAEMON_IDLE_MS"] = "1000"  # this tree's daemon ends soon after the run
    opened: list[Window] = []
    try:
        opened.append(Window(src, data, env))
        daemons = daemons_of(data)
        first_alone = rss_kib(opened[0].proc.pid) + sum(rss_kib(pid) for pid in daemons)
        for _ in range(windows - 1):
            opened.append(Window(src, data, env))
        own = [rss_kib(w.proc.pid) for w in opened]
        shared = sum(rss_kib(pid) for pid in daemons)
    finally:
        for w in opened:
            w.close()
    total = sum(own) + shared
    return {
        "first_init_ms": opened[0].init_s * 1000,
        "next_init_ms": statistics.median(w.init_s for w in opened[1:]) * 1000,
        "per_window_mb": (total - first_alone) / (windows - 1) / 1024,
        "total_mb": total / 1024,
        "call_ms": statistics.median(w.call_s for w in opened) * 1000,
        "processes": len(opened) + len(daemons),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-src", type=checkout, default=None, help="e.g. 970ce9a")
    parser.add_argument("--windows", type=int, default=5)
    args = parser.parse_args()
    if args.windows < 2:
        parser.error("--windows: at least 2 (the cost of an additional window)")
    print(machine())
    sides: list[tuple[str, Path | None]] = [("this tree", None)]
    if args.baseline_src is not None:
        sides.append((args.baseline_src.name, args.baseline_src))
    with tempfile.TemporaryDirectory(prefix="bench-mcp-windows-") as tmp:
        results = {name: run_side(name, src, args.windows, Path(tmp)) for name, src in sides}
    print(f"{args.windows} windows over one data dir (shared/corpus/dsh), one after another")
    print("| side | first window initialize | each next window initialize | RSS per additional"
          " window | RSS of all | processes | session_search (median) |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        print(f"| {name} | {r['first_init_ms']:.0f} ms | {r['next_init_ms']:.0f} ms"
              f" | {r['per_window_mb']:.1f} MB | {r['total_mb']:.0f} MB | {r['processes']:.0f}"
              f" | {r['call_ms']:.1f} ms |")  # fmt: skip


if __name__ == "__main__":
    main()
