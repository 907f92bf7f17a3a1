"""Partitioned nodes (``sessionq node``) against a full replica, on one published corpus.

One real broker (``deploy/kafka/start.sh`` in a temporary dir, purged at the end), one
topic set with ``--partitions`` (6) partitions, the corpus (default: the real corpus of
``shared/corpus/dsh``; ``--corpus DIR`` for another dsh root) published once. Then:

* **baseline** -- ``sessionq indexer`` + ``sessionq worker`` over one data dir (a full
  replica): ingest time to caught-up, store bytes, then the request load;
* **nodes 1, 2, 3** -- that many ``sessionq node`` processes in a fresh group (with
  ``--standby-replicas 1`` from 2 nodes on): time from their start until every partition
  is ready and every node's lineage copy knows every session; store bytes per node (the
  partitions it owns; standby copies apart); the same request load; then ``kill -9`` of
  the node owning most partitions under a trickle of requests: seconds from the kill to
  the first answer for each of its partitions.

Load: closed loop, ``--concurrency`` callers for ``--seconds`` s, each sending its next
call when its reply arrived: session_search / session_trace / session_event_read for
callers in every workspace (one caller per workspace, keyed by its workspace). The
host client runs in this process (it costs CPU on the same 2 cores).

Prints a table and writes ``bench/out/nodes.json`` (every figure, the load average).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import sqlite3
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Final

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_kafka import Broker, Procs, _loadavg, create_topics, end_offsets
from bench.bench_store import _percentile, machine

ROOT: Final = Path(__file__).resolve().parents[1]
OUT: Final = ROOT / "bench" / "out"
SQ: Final = str(ROOT / ".venv" / "bin" / "sessionq")


def dir_bytes(path: Path) -> int:
    """Bytes under a directory, or of a SQLite file with its -wal and -shm."""
    if path.is_dir():
        return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    return sum(f.stat().st_size for f in path.parent.glob(path.name + "*") if f.is_file())


def count(path: Path, sql: str) -> int:
    if not path.exists():
        return 0
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        return int(conn.execute(sql).fetchone()[0])
    except sqlite3.Error:
        return 0
    finally:
        conn.close()


def status(node: Path) -> dict[str, Any]:
    try:
        raw: Any = json.loads((node / "node.json").read_text())
    except (OSError, ValueError):
        return {}
    return raw if isinstance(raw, dict) else {}


def callers_of(full: Path) -> dict[str, str]:
    """One caller per workspace of the full replica: session id -> workspace key."""
    conn = sqlite3.connect(f"file:{full / 'store.sqlite3'}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT id, cwd FROM sessions WHERE cwd IS NOT NULL ORDER BY id")
        out: dict[str, str] = {}
        for sid, cwd in rows:
            if cwd not in out.values():
                out[str(sid)] = str(cwd)
        return out
    finally:
        conn.close()


async def wait_for(what: str, cond: Any, timeout: float) -> float:
    t0 = time.monotonic()
    while True:
        result = cond()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.2)


async def load(
    kafka: Any, callers: dict[str, str], concurrency: int, seconds: float
) -> dict[str, Any]:
    from worker.host.client import SessionqClient

    rng = random.Random(1)
    items = sorted(callers.items())
    calls = [
        ("session_search", {"query": "file"}),
        ("session_trace", {}),
        ("session_event_read", {"seq": 0, "after": 2}),
    ]
    lat: list[float] = []
    errors: dict[str, int] = {}
    async with SessionqClient(kafka) as client:
        end = time.perf_counter() + seconds

        async def one_caller() -> None:
            while time.perf_counter() < end:
                caller, key = rng.choice(items)
                tool, args = rng.choice(calls)
                t = time.perf_counter()
                reply = await client.call(
                    tool, args, session_id=caller, routing_key=key, timeout_ms=30000
                )
                lat.append((time.perf_counter() - t) * 1000)
                if reply.error is not None and reply.error.code in (
                    "TOOL_TIMEOUT",
                    "SESSION_QUERY_BUSY",
                    "SESSION_QUERY_MISROUTED",
                ):
                    errors[reply.error.message] = errors.get(reply.error.message, 0) + 1

        t0 = time.perf_counter()
        await asyncio.gather(*(one_caller() for _ in range(concurrency)))
        wall = time.perf_counter() - t0
    return {
        "requests": len(lat),
        "throughput": len(lat) / wall,
        "p50_ms": _percentile(lat, 50),
        "p99_ms": _percentile(lat, 99),
        "errors": errors,
    }


async def failover(
    kafka: Any, callers: dict[str, str], victim_parts: list[int], partitions: int, kill: Any
) -> dict[int, float]:
    """Seconds from ``kill()`` to the first answer for each partition in ``victim_parts``."""
    from indexer.kafka.node_group import partition_for
    from worker.host.client import SessionqClient

    mine = {
        p: next((c, k) for c, k in callers.items() if partition_for(k.encode(), partitions) == p)
        for p in victim_parts
        if any(partition_for(k.encode(), partitions) == p for k in callers.values())
    }
    out: dict[int, float] = {}
    async with SessionqClient(kafka) as client:
        t0 = time.monotonic()
        kill()

        async def probe(p: int, caller: str, key: str) -> None:
            while True:
                sent = time.monotonic()
                reply = await client.call(
                    "session_trace", {}, session_id=caller, routing_key=key, timeout_ms=2000
                )
                if reply.error is None:
                    out[p] = time.monotonic() - t0
                    return
                await asyncio.sleep(max(0.0, 0.1 - (time.monotonic() - sent)))

        await asyncio.wait_for(asyncio.gather(*(probe(p, c, k) for p, (c, k) in mine.items())), 300)
    return out


async def fresh_requests(
    env: dict[str, str], kafka: Any, name: str, partitions: int
) -> tuple[dict[str, str], Any]:
    """A requests topic of this run's own (as many partitions as the events): a new group
    would otherwise first answer the earlier runs' requests still within deadline."""
    topic = f"{env['SESSIONQ_EVENTS_TOPIC'].rsplit('.', 1)[0]}.requests-{name}"
    await create_topics(kafka.bootstrap, [topic], partitions)
    return {**env, "SESSIONQ_REQUESTS_TOPIC": topic}, kafka.model_copy(
        update={"requests_topic": topic}
    )


async def main(args: argparse.Namespace) -> dict[str, Any]:
    from indexer.settings import KafkaSettings
    from worker.host.topics import ensure_topics

    OUT.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench-nodes-", dir=OUT))
    broker = Broker(tmp / "kafka")
    procs = Procs()
    results: dict[str, Any] = {"machine": machine(), "loadavg_start": _loadavg(), "runs": {}}
    try:
        if args.bootstrap:
            broker.bootstrap = args.bootstrap
        else:
            broker.start()
        prefix = f"bn-{uuid.uuid4().hex[:6]}"
        env = {
            "SESSIONQ_BOOTSTRAP": broker.bootstrap,
            "SESSIONQ_EVENTS_TOPIC": f"{prefix}.events",
            "SESSIONQ_REQUESTS_TOPIC": f"{prefix}.requests",
            "SESSIONQ_REPLIES_TOPIC": f"{prefix}.replies",
            "SESSIONQ_DLQ_TOPIC": f"{prefix}.dlq",
            "SESSIONQ_LINEAGE_TOPIC": f"{prefix}.lineage",
            "SESSIONQ_METRICS_LISTEN": "127.0.0.1:0",
            "SESSIONQ_INSECURE_UNAUTHENTICATED_CALLERS": "true",
            "SESSIONQ_BATCH_MS": "100",
        }
        kafka = KafkaSettings(
            bootstrap=broker.bootstrap,
            events_topic=env["SESSIONQ_EVENTS_TOPIC"],
            requests_topic=env["SESSIONQ_REQUESTS_TOPIC"],
            replies_topic=env["SESSIONQ_REPLIES_TOPIC"],
            dlq_topic=env["SESSIONQ_DLQ_TOPIC"],
            lineage_topic=env["SESSIONQ_LINEAGE_TOPIC"],
        )
        await ensure_topics(kafka, args.partitions)
        t = time.monotonic()
        pub = procs.start([SQ, "publish", str(args.corpus)], log_path=tmp / "publish.log", env=env)
        await asyncio.to_thread(pub.wait, 1800)
        results["publish_s"] = time.monotonic() - t
        ends = await end_offsets(broker.bootstrap, env["SESSIONQ_EVENTS_TOPIC"])
        results["records"] = sum(ends.values())

        # ---- baseline: a full replica ------------------------------------------------------
        full = tmp / "full"
        base_env, base_kafka = await fresh_requests(env, kafka, "full", args.partitions)
        procs.start([SQ, "indexer", "--data", str(full)], log_path=tmp / "indexer.log", env=env)

        def full_caught_up() -> bool:
            stored = count(
                full / "store.sqlite3", "SELECT coalesce(sum(next_offset), 0) FROM offsets"
            )
            return bool(stored == results["records"])

        ingest_s = await wait_for("the full replica", full_caught_up, 1800)
        sessions = count(full / "store.sqlite3", "SELECT count(*) FROM sessions")
        from indexer.stats import store_stats

        events = store_stats(full).events
        results.update(sessions=sessions, events=events)
        procs.start(
            [SQ, "worker", "--data", str(full), "--group", f"{prefix}-w"],
            log_path=tmp / "worker.log",
            env=base_env,
        )
        callers = callers_of(full)
        every = f"assigned partitions {list(range(args.partitions))}"
        await wait_for("the worker to join", lambda: every in (tmp / "worker.log").read_text(), 120)
        base = await load(base_kafka, callers, args.concurrency, args.seconds)
        results["runs"]["full replica"] = {
            "ingest_s": ingest_s,
            "bytes_per_node": [dir_bytes(full)],
            **base,
            "loadavg": _loadavg(),
        }
        procs.kill_all()

        # ---- 1, 2, 3 nodes -----------------------------------------------------------------
        for n in args.nodes:
            group = f"{prefix}-n{n}"
            dirs = [tmp / f"n{n}-{i}" for i in range(n)]
            run_env, run_kafka = await fresh_requests(env, kafka, f"n{n}", args.partitions)
            extra = ["--standby-replicas", "1"] if n > 1 else []
            t = time.monotonic()
            running = [
                procs.start(
                    [SQ, "node", "--data", str(d), "--group", group, *extra],
                    log_path=tmp / f"{d.name}.log",
                    env=run_env,
                )
                for d in dirs
            ]

            def ready(dirs: list[Path] = dirs) -> bool:
                owned = [set(status(d).get("ready", [])) for d in dirs]
                same = all(
                    set(status(d).get("owned", [])) == o for d, o in zip(dirs, owned, strict=True)
                )
                return (
                    same
                    and all(owned)
                    and sorted(p for o in owned for p in o) == list(range(args.partitions))
                    and all(
                        count(d / "lineage.sqlite3", "SELECT count(*) FROM lineage") == sessions
                        for d in dirs
                    )
                )

            caught = await wait_for(f"{n} nodes", ready, 1800)
            per_node = [
                sum(dir_bytes(d / "partitions" / str(p)) for p in status(d).get("owned", []))
                for d in dirs
            ]
            standby = [
                sum(dir_bytes(d / "partitions" / str(p)) for p in status(d).get("standby", []))
                for d in dirs
            ]
            measured = await load(run_kafka, callers, args.concurrency, args.seconds)
            run: dict[str, Any] = {
                "ingest_s": caught,
                "bytes_per_node": per_node,
                "standby_bytes_per_node": standby,
                "lineage_bytes": dir_bytes(dirs[0] / "lineage.sqlite3"),
                **measured,
                "loadavg": _loadavg(),
            }
            if n > 1:
                most = max(range(n), key=lambda i: len(status(dirs[i]).get("owned", [])))
                lost = sorted(status(dirs[most]).get("owned", []))
                victim = running[most]
                run["failover_s"] = await failover(
                    run_kafka,
                    callers,
                    lost,
                    args.partitions,
                    lambda v=victim: os.killpg(v.pid, signal.SIGKILL),
                )
            results["runs"][f"{n} node{'s' if n > 1 else ''}"] = run
            procs.kill_all()
    finally:
        procs.kill_all()
        if not args.bootstrap:
            broker.stop()
    results["loadavg_end"] = _loadavg()
    return results


def report(r: dict[str, Any]) -> None:
    print(
        f"corpus: {r['sessions']} sessions, {r['events']} events, {r['records']} records;"
        f" load average {r['loadavg_start']} -> {r['loadavg_end']}"
    )
    print(
        f"{'run':<14} {'ingest s':>9} {'store MB/node':>22} {'req/s':>7} {'p50 ms':>7}"
        f" {'p99 ms':>7} {'failover s':>12}"
    )
    base = r["runs"]["full replica"]["throughput"]
    for name, run in r["runs"].items():
        per = "/".join(f"{b / 1e6:.2f}" for b in run["bytes_per_node"])
        fo = run.get("failover_s")
        fo_s = f"{max(fo.values()):.1f}" if fo else "-"
        print(
            f"{name:<14} {run['ingest_s']:>9.1f} {per:>22} {run['throughput']:>7.1f}"
            f" {run['p50_ms']:>7.1f} {run['p99_ms']:>7.1f} {fo_s:>12}"
            f"   ({run['throughput'] / base:.2f}x the full replica's req/s; load {run['loadavg']})"
        )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus" / "dsh")
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--nodes", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--bootstrap", help="a running broker instead of a new one")
    parsed = ap.parse_args()
    res = asyncio.run(main(parsed))
    (OUT / "nodes.json").write_text(json.dumps(res, indent=2, default=str))
    report(res)
