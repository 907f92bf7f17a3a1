"""Time until a new replica answers its first request: replay from offset 0 vs snapshot
restore + catch-up, on the (a) realistic mix; plus snapshot create/restore time and size.

One real broker (``deploy/kafka/start.sh`` in a temporary directory, stopped and purged
at the end); every sessionq role is a ``python -m worker`` subprocess of this tree.

1. ``bench/out/corpus-mix-<events>`` (``gen_corpus.py --kind mix``; reused when there)
   is split by session file: the first ``1 - --tail`` go to the events topic (untimed),
   ``sessionq indexer`` builds a source replica from them (its time is reported too);
2. ``sessionq snapshot create`` of that replica (timed; the indexer is stopped first so
   the figure is the copy alone — it does not need to be, ``tests/snapshot`` takes
   snapshots of running indexers);
3. the remaining ``--tail`` sessions are published (the records a restored replica must
   catch up on);
4. **replay**: ``sessionq indexer`` on an empty data dir, from offset 0; **snapshot**:
   ``sessionq snapshot restore`` then ``sessionq indexer`` on the restored dir. Each is
   timed from its first process start until the replica answers its first request: its
   stored offsets equal the topic's end offsets (what its ``/readyz`` reports) and a
   ``session_search`` over the data dir, as a caller whose session is in the tail,
   answers (through ``Pipeline``, in this process).

Printed side by side; ``bench/out/snapshot-results.json`` holds every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_kafka import Broker, Procs, create_topics, end_offsets, log, stored_offsets
from bench.bench_store import MIX_EVENTS, _code_fingerprint, _generate, machine

ROOT: Final = Path(__file__).resolve().parents[1]
OUT: Final = ROOT / "bench" / "out"
SQ: Final = [sys.executable, "-m", "worker"]
TARGET_SPEEDUP: Final = 10.0


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _link_dir(files: Sequence[Path], into: Path) -> Path:
    """A folder of symlinks: one publish argument for thousands of files."""
    into.mkdir(parents=True)
    for f in files:
        (into / f.name).symlink_to(f.resolve())
    return into


def _run(
    cmd: Sequence[str], env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(
        list(cmd),
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[2:4])} failed: {out.stdout[-800:]} {out.stderr[-1500:]}")
    return out


async def _publish(bootstrap: str, folder: Path, env: dict[str, str]) -> str:
    t0 = time.perf_counter()
    out = await asyncio.to_thread(
        _run, [*SQ, "publish", "--bootstrap", bootstrap, str(folder)], env, 7200
    )
    line = out.stdout.strip().splitlines()[0]
    log(f"  {line} in {time.perf_counter() - t0:.1f}s")
    return line


def first_answer(data: Path, caller: str) -> float:
    """Open the data dir as a worker does and answer one ``session_search``; seconds."""
    from indexer.query.service import StoreQueryService
    from worker.calls.pipeline import Pipeline
    from worker.tools.access import Caller

    t0 = time.perf_counter()
    service = StoreQueryService(data)
    try:
        result = asyncio.run(
            Pipeline(service).call("session_search", {"query": "the"}, Caller(caller, None))
        )
    finally:
        service.close()
    if getattr(result, "error", None) is not None:
        raise RuntimeError(f"the first request failed: {result}")
    return time.perf_counter() - t0


async def _until_caught_up(
    data: Path, topic: str, ends: dict[int, int], proc: subprocess.Popen[bytes], logf: Path
) -> float:
    t0 = time.perf_counter()
    while True:
        got = stored_offsets(data, topic)
        if got and all(got.get(p, 0) >= o for p, o in ends.items()):
            return time.perf_counter() - t0
        if proc.poll() is not None:
            raise RuntimeError(f"indexer died: {logf.read_text()[-2000:]}")
        await asyncio.sleep(0.1)


async def replica(
    name: str,
    procs: Procs,
    bootstrap: str,
    data: Path,
    topic: str,
    ends: dict[int, int],
    env: dict[str, str],
    tmp: Path,
    caller: str | None,
    restore_from: Path | None = None,
) -> dict[str, Any]:
    """Start a replica (restore first when given a snapshot) and time it until it
    answers its first request."""
    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    if restore_from is not None:
        got = await asyncio.to_thread(
            _run,
            [*SQ, "snapshot", "restore", "--from", str(restore_from), "--data", str(data)],
            env,
            3600,
        )
        out["restore_s"] = round(time.perf_counter() - t0, 2)
        out["restore_output"] = got.stdout.strip()
        log(f"  {name}: restored in {out['restore_s']}s")
    logf = tmp / f"indexer-{name}.log"
    cmd = [*SQ, "indexer", "--bootstrap", bootstrap, "--data", str(data), "--metrics-listen", ""]
    t_index = time.perf_counter()
    proc = procs.start(cmd, log_path=logf, env=env)
    try:
        await _until_caught_up(data, topic, ends, proc, logf)
        out["caught_up_s"] = round(time.perf_counter() - t_index, 2)
        if caller is not None:
            out["first_request_s"] = round(await asyncio.to_thread(first_answer, data, caller), 3)
    finally:
        procs.stop(proc, timeout=120)
    out["until_first_answer_s"] = round(
        out.get("restore_s", 0) + out["caught_up_s"] + out.get("first_request_s", 0), 2
    )
    out["data_bytes"] = _dir_bytes(data)
    log(f"  {name}: {out}")
    return out


async def amain(args: argparse.Namespace) -> dict[str, Any]:
    events = max(1_000, int(MIX_EVENTS * args.scale))
    corpus = args.corpus or OUT / f"corpus-mix-{events}"
    if not (corpus / "manifest.json").exists():
        _generate("mix", corpus, events, args.seed)
    files = sorted(corpus.glob("*.jsonl"))
    cut = int(len(files) * (1 - args.tail))
    head, tail = files[:cut], files[cut:]
    res: dict[str, Any] = {
        "machine": machine(),
        "code": _code_fingerprint(),
        "scale": args.scale,
        "corpus": str(corpus),
        "sessions": len(files),
        "tail_sessions": len(tail),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "loadavg_start": os.getloadavg(),
    }
    tmp = Path(tempfile.mkdtemp(prefix="sessionq-bench-snap-"))
    broker = Broker(tmp / "kafka")
    procs = Procs()
    try:
        log("starting the broker ...")
        broker.start()
        topic = f"bench.snap.events.{uuid.uuid4().hex[:6]}"
        dlq = f"bench.snap.dlq.{uuid.uuid4().hex[:6]}"
        await create_topics(broker.bootstrap, [topic, dlq], partitions=args.partitions)
        env = {"SESSIONQ_EVENTS_TOPIC": topic, "SESSIONQ_DLQ_TOPIC": dlq}
        log(f"publishing {len(head)} sessions (untimed) ...")
        res["publish_head"] = await _publish(broker.bootstrap, _link_dir(head, tmp / "head"), env)
        head_ends = await end_offsets(broker.bootstrap, topic)

        log("building the source replica ...")
        src = tmp / "source"
        res["source"] = await replica(
            "source", procs, broker.bootstrap, src, topic, head_ends, env, tmp, None
        )

        log("snapshot create ...")
        snaps = Path(args.to) if args.to else tmp / "snapshots"
        t0 = time.perf_counter()
        made = await asyncio.to_thread(
            _run, [*SQ, "snapshot", "create", "--data", str(src), "--to", str(snaps)], env, 3600
        )
        res["snapshot_create_s"] = round(time.perf_counter() - t0, 2)
        res["snapshot_create_output"] = made.stdout.strip()
        [name] = [p for p in os.listdir(snaps) if not p.startswith(".")]
        manifest = json.loads((snaps / name / "manifest.json").read_text())
        res["snapshot_bytes"] = sum(f["size"] for f in manifest["files"])
        res["snapshot_files"] = len(manifest["files"])
        log(f"  {res['snapshot_create_output']} ({res['snapshot_create_s']}s)")

        log(f"publishing the {len(tail)} tail sessions (untimed) ...")
        res["publish_tail"] = await _publish(broker.bootstrap, _link_dir(tail, tmp / "tail"), env)
        ends = await end_offsets(broker.bootstrap, topic)
        res["records"] = sum(ends.values())
        res["records_after_snapshot"] = sum(ends.values()) - sum(head_ends.values())
        caller = tail[-1].stem

        log("replica by replay from offset 0 ...")
        res["replay"] = await replica(
            "replay", procs, broker.bootstrap, tmp / "replay", topic, ends, env, tmp, caller
        )
        log("replica from the snapshot ...")
        res["from_snapshot"] = await replica(
            "snapshot",
            procs,
            broker.bootstrap,
            tmp / "restored",
            topic,
            ends,
            env,
            tmp,
            caller,
            restore_from=snaps,
        )
        res["speedup"] = round(
            res["replay"]["until_first_answer_s"] / res["from_snapshot"]["until_first_answer_s"], 1
        )
        res["loadavg_end"] = os.getloadavg()
    finally:
        procs.kill_all()
        broker.stop()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return res


def report(res: dict[str, Any]) -> list[str]:
    r, s = res["replay"], res["from_snapshot"]
    ok = res["speedup"] >= TARGET_SPEEDUP
    return [
        f"mix (a) at scale {res['scale']}: {res['sessions']:,} sessions,"
        f" {res['records']:,} records;"
        f" {res['tail_sessions']:,} sessions ({res['records_after_snapshot']:,} records)"
        " published after the snapshot",
        "",
        "| new replica | restore | indexer until caught up | first request | until it answers |",
        "|---|---|---|---|---|",
        f"| replay from offset 0 | — | {r['caught_up_s']:.1f} s"
        f" | {r['first_request_s'] * 1000:.0f} ms"
        f" | **{r['until_first_answer_s']:.1f} s** |",
        f"| snapshot restore + catch-up | {s['restore_s']:.1f} s | {s['caught_up_s']:.1f} s"
        f" | {s['first_request_s'] * 1000:.0f} ms | **{s['until_first_answer_s']:.1f} s** |",
        "",
        f"speedup {res['speedup']}x (target >= {TARGET_SPEEDUP:.0f}x: {'PASS' if ok else 'MISS'})",
        f"snapshot create {res['snapshot_create_s']:.1f} s; size {res['snapshot_bytes']:,} bytes"
        f" in {res['snapshot_files']} files"
        f" (source data dir {res['source']['data_bytes']:,} bytes);"
        f" restore {s['restore_s']:.1f} s",
        f"source replica (replay of the first part) {res['source']['caught_up_s']:.1f} s;"
        f" load {res['loadavg_start'][0]:.2f} -> {res['loadavg_end'][0]:.2f};"
        f" code {res['code'].get('git_head', '?')}",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of mix (a)'s 2M events")
    ap.add_argument(
        "--tail", type=float, default=0.02, help="fraction published after the snapshot"
    )
    ap.add_argument("--corpus", type=Path, default=None, help="an existing mix corpus")
    ap.add_argument("--to", default=None, help="snapshot directory (default: a temp dir)")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("--out", type=Path, default=OUT / "snapshot-results.json")
    args = ap.parse_args(argv)
    res = asyncio.run(amain(args))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=2, default=str))
    print("\n".join(report(res)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
