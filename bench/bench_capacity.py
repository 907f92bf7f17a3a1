"""What one Kafka worker process sustains, beside a baseline checkout's figure from the
same run: closed-loop requests/s, latency at half of that rate against the no-op
floor, and 1, 2 and 4 worker processes on one data dir.

Sides, like ``bench_cpu.py``: **this** tree and **baseline** (``--baseline-src``, e.g.
``git worktree add /tmp/base-7812bbe 7812bbe``) each ingest the real corpus with their
own code into their own data dir and run their own ``sessionq worker``
(``--insecure-unauthenticated-callers``: a baseline's tokens are not this tree's);
**echo** is sessionq's real Kafka ``Worker`` over a no-op pipeline (the transport's
floor, ``bench_kafka.py _echo``). One broker (``deploy/kafka/start.sh``), a requests
topic of 4 partitions per worker group, one ``SessionqClient`` in this process. The
calls are ``bench.mix.fixed_mix``: the five tools in equal shares, callers and targets
from the corpus' workspaces, every reply checked ``ok``.

Phases (``--phases closed,rate,workers``):

* **closed** — ``--concurrency`` callers, each sending its next call when its reply came
  back, for ``--seconds`` per side, the sides in turn for ``--repeats`` interleaved
  repeats; the figure is the median of the repeats' requests/s (ok replies / wall), and
  the worker's CPU per request. Target: this ≥ 3 × baseline.
* **rate** — an open loop (call i sent at t0 + i/rate whatever came back) at half of
  this tree's closed-loop rate, for ``--seconds`` × 2, for this tree's worker and the
  echo worker in turn; latency = send → reply. Target: this p99 ≤ 3 × echo p99.
* **workers** — this tree with 1, 2 and 4 worker processes in one consumer group on
  one data dir (a fresh topic and group per configuration), closed loop as above.

The load average is printed with every figure; the client, the broker and the workers
share the machine's cores, as they did when the issue's figures were taken.

Run: ``nice .venv/bin/python bench/bench_capacity.py --baseline-src /tmp/base-7812bbe``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_cpu import (
    Side,
    _loadavg,
    cpu_seconds,
    ingest,
    log,
    print_and_save,
    start_worker,
    wait_assigned,
)
from bench.bench_kafka import (
    Broker,
    Procs,
    Sample,
    _assigned,
    closed_loop,
    create_topics,
    open_loop,
    summarize,
)
from bench.bench_store import _code_fingerprint, machine
from bench.mix import REAL_CORPUS, TOOLS, Call, checkout, fixed_mix

OUT: Final = Path(__file__).resolve().parent / "out"
THROUGHPUT_TARGET: Final = 3.0  # this tree's closed-loop requests/s over the baseline's
P99_TARGET: Final = 3.0  # this tree's p99 at half its rate over the echo floor's
TIMEOUT_MS: Final = 20_000


@dataclass
class MixWorkload:
    """``bench_kafka``'s workload interface over the fixed mix: calls in turn, round robin
    over the five tools (every tool weighs the same, as in ``bench_cpu``)."""

    calls: list[Call]
    at: int = 0

    def request(self) -> tuple[str, dict[str, Any], str, str]:
        call = self.calls[self.at % len(self.calls)]
        self.at += 1
        return call.tool, call.arguments, call.caller, call.workspace


@dataclass
class Group:
    """One consumer group of workers of one side on its own requests topic."""

    side: Side
    topic: str
    procs: list[Any] = field(default_factory=list)
    client: Any = None

    def cpu(self) -> float:
        return sum(cpu_seconds(p.pid) for p in self.procs)


def interleaved(mix: dict[str, list[Call]]) -> list[Call]:
    """The mix's calls, one of each tool in turn."""
    return [mix[t][i] for i in range(min(len(v) for v in mix.values())) for t in TOOLS]


def unexpected(samples: Sequence[Sample]) -> dict[str, int]:
    """Replies that are not ok, by code: the mix's callers and targets all exist and share
    a workspace, so every call should succeed."""
    out: dict[str, int] = {}
    for s in samples:
        if not s.ok:
            out[s.code or "?"] = out.get(s.code or "?", 0) + 1
    return out


async def start_group(
    side: Side, n: int, procs: Procs, tmp: Path, bootstrap: str, kafka: Any
) -> Group:
    """``n`` worker processes of ``side`` in one fresh group on a fresh topic, assigned
    all four partitions between them, and a client for that topic."""
    from worker.host.client import SessionqClient

    topic = f"bench.cap.{side.name}.{n}.{uuid.uuid4().hex[:6]}"
    await create_topics(bootstrap, [topic])
    group = Group(side, topic)
    logs = []
    where = tmp / topic  # the group's worker logs
    where.mkdir()
    for i in range(n):
        member = Side(side.name if n == 1 else f"{side.name}-{i}", side.src, side.data)
        member.topic = topic
        start_worker(member, procs, where, bootstrap, group=f"bench-cap-{topic}")
        assert member.proc is not None
        group.procs.append(member.proc)
        logs.append(where / f"worker-{member.name}.log")
    if n == 1:
        await wait_assigned(Side(side.name, side.src, side.data, proc=group.procs[0]), logs[0])
    else:
        deadline = time.monotonic() + 120
        while sorted(p for lp in logs for p in (_assigned(lp) or [])) != [0, 1, 2, 3] or not all(
            _assigned(lp) for lp in logs
        ):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{n} workers of {side.name} not assigned")
            await asyncio.sleep(0.25)
    group.client = SessionqClient(kafka, requests_topic=topic)
    await group.client.start()
    return group


async def stop_group(group: Group, procs: Procs, groups: list[Group]) -> None:
    """Its client, then its workers (SIGTERM); off the list of groups to clean up."""
    await group.client.stop()
    for p in group.procs:
        procs.stop(p)
    groups.remove(group)


async def closed_run(group: Group, calls: list[Call], args: argparse.Namespace) -> dict[str, Any]:
    """One closed-loop run: requests/s, CPU per request, latency, unexpected replies."""
    wl = MixWorkload(calls)
    cpu0 = group.cpu()
    samples, wall = await closed_loop(group.client, wl, args.concurrency, args.seconds, TIMEOUT_MS)
    cpu = group.cpu() - cpu0
    s = summarize(samples, wall)
    return {
        "rps": s["ok"] / wall,
        "cpu_ms_per_request": 1000 * cpu / max(1, len(samples)),
        "p50": s["p50"],
        "p99": s["p99"],
        "n": len(samples),
        "unexpected": unexpected(samples),
        "load": _loadavg(),
    }


async def rate_run(group: Group, calls: list[Call], rate: float, seconds: float) -> dict[str, Any]:
    samples = await open_loop(group.client, MixWorkload(calls), rate, seconds, TIMEOUT_MS)
    s = summarize(samples)
    return {
        "rate": rate,
        "p50": s["p50"],
        "p99": s["p99"],
        "max": s["max"],
        "throughput": s["throughput"],
        "sched_lag_p99": s["sched_lag_p99"],
        "n": len(samples),
        "unexpected": unexpected(samples),
        "load": _loadavg(),
    }


async def amain(args: argparse.Namespace) -> dict[str, Any]:
    from indexer.settings import KafkaSettings

    tmp = Path(tempfile.mkdtemp(prefix="bench-capacity-", dir=args.tmp))
    procs = Procs()
    sides = [Side("this", None, tmp / "data-this")]
    if args.baseline_src is not None:
        sides.append(Side("baseline", args.baseline_src, tmp / "data-baseline"))
    results: dict[str, Any] = {
        "machine": machine(),
        "code": _code_fingerprint(),
        "baseline_src": str(args.baseline_src),
        "concurrency": args.concurrency,
        "seconds": args.seconds,
    }
    broker = Broker(tmp / "kafka")
    groups: list[Group] = []
    lines: list[str] = []
    try:
        for s in sides:
            log(f"ingest the real corpus with {s.name}'s code ...")
            ingest(s, REAL_CORPUS)
        calls = interleaved(fixed_mix(sides[0].data / "store.sqlite3", 400, seed=1))
        broker.start()
        await create_topics(broker.bootstrap, ["sessionq.replies", "sessionq.dlq"])
        kafka = KafkaSettings(bootstrap=broker.bootstrap)
        echo = Side("echo", None, sides[0].data)
        singles = {}
        for s in [*sides, echo]:
            singles[s.name] = await start_group(s, 1, procs, tmp, broker.bootstrap, kafka)
            groups.append(singles[s.name])
        for g in singles.values():  # warm-up: page cache, readers, connections
            await closed_run(g, calls, argparse.Namespace(concurrency=4, seconds=2.0))

        if "closed" in args.phases or "rate" in args.phases:
            runs: dict[str, list[dict[str, Any]]] = {name: [] for name in singles}
            for r in range(args.repeats):
                order = list(singles) if r % 2 == 0 else list(reversed(singles))
                for name in order:
                    runs[name].append(await closed_run(singles[name], calls, args))
                log(f"closed loop repeat {r + 1}/{args.repeats} done")
            results["closed"] = runs
            rps = {n: statistics.median(x["rps"] for x in v) for n, v in runs.items()}
            cpu = {
                n: statistics.median(x["cpu_ms_per_request"] for x in v) for n, v in runs.items()
            }
            lines.append(
                f"closed loop, one worker process, {args.concurrency} callers, "
                f"{args.seconds:.0f} s x {args.repeats} (median):"
            )
            for n in singles:
                bad = [x["unexpected"] for x in runs[n] if x["unexpected"]]
                lines.append(
                    f"  {n:<9} {rps[n]:8.1f} req/s  {cpu[n]:6.2f} ms CPU/request"
                    + (f"  unexpected replies {bad}" if bad else "")
                )
            if "baseline" in rps:
                ratio = rps["this"] / rps["baseline"]
                mark = "met" if ratio >= THROUGHPUT_TARGET else "NOT met"
                lines.append(
                    f"  this / baseline: x{ratio:.2f} (target >= x{THROUGHPUT_TARGET:.0f}: {mark})"
                )

            if "rate" in args.phases:
                rate = rps["this"] / 2
                lat: dict[str, dict[str, Any]] = {}
                for name in ("echo", "this", "echo", "this"):
                    run = await rate_run(singles[name], calls, rate, args.seconds * 2)
                    lat.setdefault(name, run)
                    if run["p99"] < lat[name]["p99"]:  # the quieter of two runs each
                        lat[name] = run
                results["rate"] = lat
                lines.append(f"open loop at half this tree's rate ({rate:.1f} req/s), better of 2:")
                for name, run in lat.items():
                    lines.append(
                        f"  {name:<9} p50 {run['p50']:7.1f} ms  p99 {run['p99']:7.1f} ms  "
                        f"max {run['max']:7.1f} ms  sent-on-time lag p99 "
                        f"{run['sched_lag_p99']:.1f} ms"
                        + (f"  unexpected {run['unexpected']}" if run["unexpected"] else "")
                    )
                ratio = lat["this"]["p99"] / lat["echo"]["p99"]
                mark = "met" if ratio <= P99_TARGET else "NOT met"
                lines.append(
                    f"  this p99 / echo p99: x{ratio:.2f} (target <= x{P99_TARGET:.0f}: {mark})"
                )

        if "workers" in args.phases:
            for g in list(groups):
                await stop_group(g, procs, groups)
            scale: dict[str, dict[str, Any]] = {}
            for n in args.workers:
                g = await start_group(sides[0], n, procs, tmp, broker.bootstrap, kafka)
                groups.append(g)
                await closed_run(g, calls, argparse.Namespace(concurrency=4, seconds=2.0))
                best = max(
                    [await closed_run(g, calls, args) for _ in range(args.repeats)],
                    key=lambda x: x["rps"],
                )
                scale[str(n)] = best
                await stop_group(g, procs, groups)
                log(f"{n} worker process(es): {best['rps']:.1f} req/s")
            results["workers"] = scale
            lines.append(f"this tree, N worker processes on one data dir (best of {args.repeats}):")
            for n, run in scale.items():
                lines.append(
                    f"  {n} process(es) {run['rps']:8.1f} req/s  "
                    f"{run['cpu_ms_per_request']:6.2f} ms CPU/request (all workers)  "
                    f"p99 {run['p99']:.1f} ms  load {run['load']}"
                )
        results["report"] = lines
        return results
    finally:
        for g in groups:
            with contextlib.suppress(Exception):
                await g.client.stop()
        procs.kill_all()
        broker.stop()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline-src", type=checkout, default=None)
    ap.add_argument("--phases", default="closed,rate,workers")
    ap.add_argument("--concurrency", type=int, default=32, help="closed-loop callers")
    ap.add_argument("--seconds", type=float, default=10.0, help="per closed-loop run")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workers", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2, 4])
    ap.add_argument("--tmp", type=Path, default=None)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--out", type=Path, default=OUT / "results-capacity.json")
    args = ap.parse_args(argv)
    args.phases = args.phases.split(",")
    if "rate" in args.phases and "closed" not in args.phases:
        args.phases.append("closed")  # the rate is half of the closed loop's
    log(f"bench_capacity: phases {args.phases}")
    print_and_save(asyncio.run(amain(args)), args.out)
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
