"""What a thread hand-off costs a tool call, in process: CPU per call of each tool's steps
6-8 (arguments, caller, the tool's own run) on the event loop, the same steps handed to
a worker thread of the loop's executor, and ``Pipeline.call`` as the pipeline places
them (a call alone runs on the loop: ``Pipeline._placed_on_loop``).

No transport and no baseline: the figures say where the CPU of ``bench_cpu.py``'s calls
goes before they reach HTTP or Kafka. The calls are ``bench.mix.fixed_mix`` over the real
corpus (ingested into a temporary data dir with this tree's code). The ways alternate
round by round; the figure per tool is the median over rounds of the CPU time of the
process (every thread) per call.

Run: ``nice .venv/bin/python bench/bench_handoff.py``
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Final

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_cpu import Side, ingest, log
from bench.bench_store import machine
from bench.mix import REAL_CORPUS, TOOLS, Call, fixed_mix
from indexer.query.service import StoreQueryService
from indexer.store.layout import sqlite_path
from worker.calls.pipeline import Pipeline
from worker.calls.tool_call import ToolCall
from worker.contract.deadline import CancelToken
from worker.tools.access import Caller
from worker.tools.registry import TOOLS as REGISTRY

WAYS: Final = ("loop", "thread", "pipeline")


def runner(pipeline: Pipeline, way: str) -> Callable[[Call], Awaitable[object]]:
    """One call of the mix: steps 6-8 on the loop, the same in a worker thread, or the
    whole pipeline (deadline, in-flight registry, gate, placement, reply)."""

    async def on_loop(call: Call) -> object:
        tool_call = ToolCall("bench", call.tool, call.arguments, Caller(call.caller))
        return pipeline._execute(REGISTRY[call.tool], tool_call, CancelToken(), None)

    async def in_thread(call: Call) -> object:
        tool_call = ToolCall("bench", call.tool, call.arguments, Caller(call.caller))
        tool = REGISTRY[call.tool]
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            None, pipeline._execute, tool, tool_call, CancelToken(), None
        )

    async def whole(call: Call) -> object:
        return await pipeline.call(call.tool, call.arguments, Caller(call.caller))

    return {"loop": on_loop, "thread": in_thread, "pipeline": whole}[way]


async def measure(
    pipeline: Pipeline, mix: dict[str, list[Call]], rounds: int, per_tool: int
) -> dict[str, dict[str, list[float]]]:
    """way -> tool -> CPU ms per call of each round."""
    figures: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for way in WAYS:  # warm-up: page cache, readers, the executor's threads
        run = runner(pipeline, way)
        for tool in TOOLS:
            for call in mix[tool][:per_tool]:
                await run(call)
    for r in range(rounds):
        order = WAYS if r % 2 == 0 else tuple(reversed(WAYS))
        for way in order:
            run = runner(pipeline, way)
            for tool in TOOLS:
                calls = mix[tool][r * per_tool : (r + 1) * per_tool]
                started = time.process_time()
                for call in calls:
                    await run(call)
                figures[way][tool].append((time.process_time() - started) / len(calls) * 1e3)
        log(f"round {r + 1}/{rounds} done")
    return figures


def report(figures: dict[str, dict[str, list[float]]]) -> list[str]:
    medians = {w: {t: statistics.median(figures[w][t]) for t in TOOLS} for w in WAYS}
    lines = [
        "CPU ms per call in process (median of rounds); hand-off = thread - loop",
        f"  {'tool':24} {'loop':>9} {'thread':>9} {'hand-off':>9} {'pipeline':>9}",
    ]
    for tool in (*TOOLS, "mix"):
        row = {
            w: statistics.fmean(medians[w].values()) if tool == "mix" else medians[w][tool]
            for w in WAYS
        }
        lines.append(
            f"  {tool:24} {row['loop']:9.3f} {row['thread']:9.3f}"
            f" {row['thread'] - row['loop']:9.3f} {row['pipeline']:9.3f}"
        )
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=REAL_CORPUS)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--per-tool", type=int, default=40, help="calls of each tool per round")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sessionq-handoff-") as tmp:
        side = Side("this", None, Path(tmp) / "data")
        log("ingest the real corpus ...")
        ingest(side, args.corpus)
        mix = fixed_mix(sqlite_path(side.data), args.per_tool * args.rounds, seed=1)
        service = StoreQueryService(side.data)
        try:
            figures = asyncio.run(measure(Pipeline(service), mix, args.rounds, args.per_tool))
        finally:
            service.close()
    print("\n".join(report(figures)))
    m = machine()
    print(f"machine: nproc={m['nproc']} ram={m['ram_gib']} GiB python={m['python']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
