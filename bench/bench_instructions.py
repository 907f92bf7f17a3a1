"""Instructions per tool call, in process, this tree beside a baseline checkout: the one
measure of the request path's CPU that does not move with the machine's load.

CPU time per call on a small shared VM moves by ±30 % from one process to the next (the
same code, the same calls), more than most single changes to the request path buy; so
``bench_cpu.py``'s figures need many rounds, and a change of a few per cent is lost in
them. The instructions a call executes move by about 2 % from run to run. Each side's
calls run in a child process under ``valgrind --tool=callgrind``: the mix's first calls of
every tool (warm-up: imports, caches, the page cache), then ``--calls`` calls of one tool; the
instructions of a child that stops after the warm-up are subtracted, so what is left is
``--calls`` calls of the tool, divided by their number. The calls are ``Pipeline.call``
(steps 2-9 as each side places them: on the loop or in a worker thread; a pipeline that
places a tool by its recent wall time has its threshold scaled by valgrind's slowdown),
no transport: ``bench_cpu.py`` measures that.

The calls are ``bench.mix.fixed_mix`` over the real corpus (the same calls for both
sides), each side's data dir ingested with its own code. Instructions are not time (a
cache miss costs no instruction), so the figures rank changes; ``bench_cpu.py`` says
what they buy in CPU time.

Run: ``nice .venv/bin/python bench/bench_instructions.py --baseline-src /tmp/base-7812bbe``
(about 7 minutes; needs ``valgrind``).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Final

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_cpu import Side, ingest, log
from bench.bench_store import machine
from bench.mix import REAL_CORPUS, ROOT, TOOLS, checkout, fixed_mix
from indexer.store.layout import sqlite_path

WARM_UP_CALLS: Final = 20
VALGRIND_SLOWDOWN: Final = 50  # about: wall-time thresholds of the child are scaled by it
_COLLECTED: Final = re.compile(r"Collected : (\d+)")

# The child: runs with the side's checkout first on sys.path, so only its code is timed.
_CHILD: Final = """
import asyncio, json, sys
src, data, calls_file, tool, count, warm, slowdown = sys.argv[1:8]
sys.path.insert(0, src)
from pathlib import Path
from indexer.query.service import StoreQueryService
import importlib
# worker/calls/ since the transports moved; asked of the checkout, not of the import system
# (an editable install of this tree would answer a module the checkout lacks)
calls = "worker.calls." if Path(src, "worker", "calls").is_dir() else "worker."
pipeline_module = importlib.import_module(calls + "pipeline")
Pipeline = pipeline_module.Pipeline
from worker.tools.access import Caller
if hasattr(pipeline_module, "LOOP_RUN_MAX_S"):  # placement by wall time: scale for valgrind
    pipeline_module.LOOP_RUN_MAX_S *= float(slowdown)
mix = json.loads(Path(calls_file).read_text())
pipeline = Pipeline(StoreQueryService(Path(data)))
async def main():
    for name, calls in mix.items():
        for call in calls[: int(warm)]:
            await pipeline.call(name, call["arguments"], Caller(call["caller"]))
    for call in mix[tool][: int(count)] if tool else []:
        await pipeline.call(tool, call["arguments"], Caller(call["caller"]))
asyncio.run(main())
"""


def instructions(src: Path, data: Path, calls_file: Path, tool: str, count: int) -> int:
    """Instructions of one child (callgrind's count: the whole process, every thread)."""
    cmd = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        "-c",
        _CHILD,
        str(src),
        str(data),
        str(calls_file),
        tool,
        str(count),
        str(WARM_UP_CALLS),
        str(VALGRIND_SLOWDOWN),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    found = _COLLECTED.search(done.stderr)
    if done.returncode != 0 or found is None:
        tail = done.stderr.strip().splitlines()[-3:]
        raise RuntimeError(f"child of {src} for {tool or 'warm-up'} failed: {tail}")
    return int(found.group(1))


def per_call(src: Path, data: Path, calls_file: Path, count: int) -> dict[str, float]:
    """Tool -> instructions per call of ``src``'s code."""
    base = instructions(src, data, calls_file, "", 0)
    out = {}
    for tool in TOOLS:
        out[tool] = (instructions(src, data, calls_file, tool, count) - base) / count
        log(f"{src.name}: {tool} {out[tool] / 1e6:.3f} M instructions per call")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--baseline-src", type=checkout, required=True, help="the checkout to compare with"
    )
    ap.add_argument("--corpus", type=Path, default=REAL_CORPUS, help="dsh logs (default: real)")
    ap.add_argument("--calls", type=int, default=100, help="calls of each tool (after warm-up)")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        print("bench_instructions: valgrind is not on PATH", file=sys.stderr)
        return 2
    if not (args.baseline_src / "worker" / "pipeline.py").is_file():
        print(f"bench_instructions: {args.baseline_src} is not a checkout", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="sessionq-instr-") as tmp:
        sides = [
            Side("this", None, Path(tmp) / "this"),
            Side("baseline", args.baseline_src, Path(tmp) / "baseline"),
        ]
        for side in sides:
            log(f"ingest the corpus with {side.name}'s code ...")
            ingest(side, args.corpus)
        mix = fixed_mix(sqlite_path(sides[0].data), max(args.calls, WARM_UP_CALLS), seed=1)
        calls_file = Path(tmp) / "calls.json"
        calls_file.write_text(
            json.dumps(
                {t: [{"arguments": c.arguments, "caller": c.caller} for c in mix[t]] for t in TOOLS}
            )
        )
        figures = {
            side.name: per_call(side.src or ROOT, side.data, calls_file, args.calls)
            for side in sides
        }
    this, base = figures["this"], figures["baseline"]
    print("M instructions per call, in process (Pipeline.call; callgrind)")
    print(f"  {'tool':24s} {'this':>10s} {'baseline':>10s} {'this/base':>10s}")
    for tool in TOOLS:
        print(f"  {tool:24s} {this[tool] / 1e6:10.3f} {base[tool] / 1e6:10.3f} "
              f"{this[tool] / base[tool]:10.2f}")  # fmt: skip
    mix_this, mix_base = sum(this.values()) / len(TOOLS), sum(base.values()) / len(TOOLS)
    print(f"  {'mix':24s} {mix_this / 1e6:10.3f} {mix_base / 1e6:10.3f} "
          f"{mix_this / mix_base:10.2f}")  # fmt: skip
    m = machine()
    print(f"machine: nproc={m.get('nproc')} python={m.get('python')}; baseline {args.baseline_src}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
