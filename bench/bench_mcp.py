"""MCP call latency: ``sessionq mcp`` over stdio vs the in-process call, same calls.

The real corpus (``shared/corpus/dsh``) is ingested into a temporary data dir (or ``--data``
is used). Then, rep by rep and case by case (interleaved, so drifting load from other
processes hits both alike), one call is timed two ways:

* **in-process** -- ``Pipeline(StoreQueryService(data)).call(tool, args, Caller(c))`` on
  this process's loop (what ``sessionq call --data`` runs);
* **mcp stdio** -- ``ClientSession.call_tool`` of the official SDK's client against a
  ``sessionq mcp --transport stdio --data D --caller C`` subprocess: JSON-RPC framing,
  the pipe, the SDK's dispatch on both sides, the same pipeline in the server.

Every MCP text is checked equal to the in-process text. Prints p50/p99 per way, the
difference, and the machine (cores, RAM, load average before and after).

Run: ``.venv/bin/python bench/bench_mcp.py [--reps 200] [--data DIR]``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_store import _percentile, machine

REPO: Final = Path(__file__).resolve().parents[1]
CORPUS: Final = REPO.parent / "shared" / "corpus" / "dsh"
CALLER: Final = "85e6db1b-b2a5-5fb3-b045-5a0a2addb250"
CASES: Final[tuple[tuple[str, dict[str, Any]], ...]] = (
    ("session_search", {"query": "PONG"}),
    ("session_search", {"query": "tool"}),
    ("session_event_search", {"query": "the"}),
    ("session_trace", {}),
    ("session_event_trace", {"seq": 1}),
    ("session_event_read", {"seq": 0, "after": 3}),
)


def _ingest(data: Path) -> None:
    from worker.cli.main import main

    with contextlib.redirect_stdout(io.StringIO()):
        if main(["ingest", str(CORPUS), "--data", str(data)]) != 0:
            raise SystemExit("ingest failed")


async def _run(data: Path, reps: int) -> dict[str, list[float]]:
    import mcp_types as types
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from indexer.query.service import StoreQueryService
    from worker.calls.pipeline import Pipeline
    from worker.tools.access import Caller

    env = dict(os.environ, PYTHONPATH=str(REPO))
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "worker", "mcp", "--data", str(data), "--caller", CALLER],
        env=env,
        cwd=str(REPO),
    )
    service = StoreQueryService(data)
    pipeline = Pipeline(service)
    timings: dict[str, list[float]] = {"in-process": [], "mcp stdio": []}
    try:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for rep in range(reps + 1):  # rep 0 warms both up, untimed
                for tool, arguments in CASES:
                    started = time.perf_counter()
                    local = await pipeline.call(tool, arguments, Caller(CALLER))
                    local_s = time.perf_counter() - started
                    started = time.perf_counter()
                    result = await session.call_tool(tool, arguments)
                    remote_s = time.perf_counter() - started
                    block = result.content[0]
                    assert isinstance(block, types.TextContent)
                    assert block.text == (local.output or ""), (tool, arguments)
                    if rep:
                        timings["in-process"].append(local_s * 1000)
                        timings["mcp stdio"].append(remote_s * 1000)
    finally:
        service.close()
    return timings


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200, help="timed rounds over the cases")
    ap.add_argument("--data", type=Path, help="an ingested data dir (default: ingest the corpus)")
    args = ap.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        data = args.data
        if data is None:
            data = Path(tmp) / "data"
            _ingest(data)
        timings = asyncio.run(_run(data, args.reps))
    load_after = os.getloadavg()
    m = machine()
    calls = len(timings["in-process"])
    print(f"MCP call latency, {calls} calls per way ({args.reps} reps x {len(CASES)} cases)")
    print(f"{'way':<12} {'p50 ms':>8} {'p99 ms':>8}")
    for way, samples in timings.items():
        print(f"{way:<12} {_percentile(samples, 50):>8.2f} {_percentile(samples, 99):>8.2f}")
    diff50 = _percentile(timings["mcp stdio"], 50) - _percentile(timings["in-process"], 50)
    diff99 = _percentile(timings["mcp stdio"], 99) - _percentile(timings["in-process"], 99)
    print(f"{'mcp - local':<12} {diff50:>8.2f} {diff99:>8.2f}")
    print(
        f"machine: nproc={m['nproc']} ram={m['ram_gib']} GiB python={m['python']};"
        f" load average {load_before[0]:.2f} before, {load_after[0]:.2f} after"
    )


if __name__ == "__main__":
    main()
