"""Soak: mixed good and hostile traffic against a real broker for N minutes (issue 10).

One local Apache Kafka broker (``deploy/kafka/start.sh``), the product's topics, a
``sessionq indexer`` and a ``sessionq worker`` (with a keyring) as subprocesses over one
data dir holding the real corpus. Two kinds of ``--window``-second windows alternate over
the same stack, ``--minutes`` of each (so a change in the machine's load hits both alike):

1. **good only**: signed ``session_search``/``session_trace``/``session_event_read`` calls
   at ``--rate`` per second from one host client;
2. **good + hostile**: the same good load, plus at ``--hostile-rate`` per second, from a
   separate process signing with a second host key of the keyring (``hostile``, which
   covers only ``/home/hostile``; the good host's key covers every workspace), a mix of
   validly signed requests for callers that do not exist (a flood its share bounds),
   byte-identical replays of its own recent requests, validly signed requests to
   missing reply topics (``sessionq.replies.nx-<i>``), requests for an unknown caller
   stamped 120 s in the future, forged tokens and tokens of other requests, refused
   ``reply_to`` topics, 64 KiB queries, 900 KB argument blobs, deeply nested arguments,
   malformed records, foreign cancels and 5 MB cancels (which the requests topic
   refuses: its records are bounded at 1 MiB).

Prints: good requests sent / answered / lost, replies duplicated, the requests group's
pinned offsets (committed < end once everything is answered), peak RSS of the indexer
and the worker (VmHWM), the worker's resident memory before, right after and 20 s after
the hostile phase, and the good requests' p50/p99 in each phase with their ratio.

Run: ``.venv/bin/python bench/soak.py --minutes 10`` (``--minutes 0.5 --window 15`` for a
smoke run).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import multiprocessing
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Final

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import MessageSizeTooLargeError

from bench.bench_kafka import Broker
from bench.bench_store import _percentile, machine
from indexer.kafka.client import assign_all
from worker.authn.keyring import keyring_entry
from worker.authn.tokens import CallerSigner, generate_key_pair
from worker.contract.envelopes import decode_reply

ROOT: Final = Path(__file__).resolve().parents[1]
SQ: Final = str(ROOT / ".venv" / "bin" / "sessionq")
CORPUS: Final = ROOT.parent / "shared" / "corpus" / "dsh"
GROUP: Final = "soak-workers"


def vm_hwm_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def vm_rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def callers(data: Path) -> list[tuple[str, str]]:
    from indexer.query.service import StoreQueryService

    service = StoreQueryService(data)
    try:
        return [
            (r.header.id, r.header.cwd)
            for r in service.filter_sessions([])
            if r.header.cwd is not None
        ]
    finally:
        service.close()


class Load:
    """Sends requests, records send time per id, and reads every reply."""

    def __init__(self, bootstrap: str, signer: CallerSigner, pool: list[tuple[str, str]]):
        self.bootstrap = bootstrap
        self.signer = signer
        self.pool = pool
        self.sent: dict[str, float] = {}
        self.good: set[str] = set()
        self.latency: dict[str, float] = {}
        self.seen: dict[str, int] = {}
        self.rng = random.Random(7)
        self.producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap, acks="all", max_request_size=8 * 1024 * 1024
        )
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, auto_offset_reset="latest", enable_auto_commit=False
        )

    async def start(self) -> None:
        await self.producer.start()
        await self.consumer.start()
        tps = await assign_all(self.consumer, "sessionq.replies")
        await self.consumer.seek_to_end(*tps)
        for tp in tps:
            await self.consumer.position(tp)
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        while True:
            for records in (await self.consumer.getmany(timeout_ms=200)).values():
                now = time.monotonic()
                for r in records:
                    reply = decode_reply(r.value)
                    self.seen[reply.id] = self.seen.get(reply.id, 0) + 1
                    if reply.id in self.good and reply.id not in self.latency:
                        self.latency[reply.id] = (now - self.sent[reply.id]) * 1000

    async def send(self, record: dict[str, Any], key: str, **kw: Any) -> None:
        await self.producer.send("sessionq.requests", orjson.dumps(record), key=key.encode(), **kw)

    def good_request(self) -> tuple[dict[str, Any], str]:
        sid, cwd = self.rng.choice(self.pool)
        rid = f"good-{uuid.uuid4()}"
        tool, args = self.rng.choice(
            [
                ("session_search", {"query": self.rng.choice(["error", "test", "file", "PONG"])}),
                ("session_trace", {}),
                ("session_event_read", {"seq": 0}),
            ]
        )
        record = {
            "v": 1,
            "kind": "request",
            "id": rid,
            "reply_to": "sessionq.replies",
            "tool": tool,
            "arguments": args,
            "timeout_ms": 30000,
            "caller": {"session_id": sid},
        }
        record["caller"]["token"] = self.signer.sign(record, cwd)
        return record, cwd

    async def run(self, seconds: float, rate: float) -> list[float]:
        phase_ids: list[str] = []
        start = time.monotonic()
        n_good = 0
        while (now := time.monotonic()) - start < seconds:
            due_good = int((now - start) * rate)
            while n_good < due_good:
                record, cwd = self.good_request()
                self.good.add(record["id"])
                self.sent[record["id"]] = time.monotonic()
                phase_ids.append(record["id"])
                await self.send(record, cwd)
                n_good += 1
            await asyncio.sleep(0.002)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(i in self.latency for i in phase_ids):
            await asyncio.sleep(0.1)
        return [self.latency[i] for i in phase_ids if i in self.latency]

    async def stop(self) -> None:
        self._reader.cancel()
        await self.consumer.stop()
        await self.producer.stop()


class Hostile:
    """The hostile mix, produced from its own process (``hostile_process``)."""

    def __init__(self, bootstrap: str, signer: CallerSigner, pool: list[tuple[str, str]]):
        self.signer = signer
        self.pool = pool
        self.rng = random.Random(11)
        self.bootstrap = bootstrap
        self.counts: dict[str, int] = {}
        self.recent: collections.deque[bytes] = collections.deque(maxlen=200)

    def hostile(self) -> tuple[bytes | dict[str, Any], str, dict[str, Any]]:
        sid, cwd = self.rng.choice(self.pool)
        rid = f"bad-{uuid.uuid4()}"
        kind = self.rng.choice(
            [
                "unknown-flood",
                "unknown-flood",
                "unknown-flood",
                "replay",
                "replay",
                "missing-topic",
                "missing-topic",
                "future",
                "forged",
                "rebound",
                "reply_to",
                "huge",
                "blob",
                "deep",
                "garbage",
                "foreign-cancel",
                "fat-cancel",
            ]
        )
        self.counts[kind] = self.counts.get(kind, 0) + 1
        base: dict[str, Any] = {
            "v": 1,
            "kind": "request",
            "id": rid,
            "reply_to": "sessionq.replies",
            "tool": "session_search",
            "arguments": {"query": "error"},
            "timeout_ms": 60000,
            "caller": {"session_id": sid},
        }
        kw: dict[str, Any] = {}
        own = f"/home/hostile/w{self.rng.randrange(8)}"  # the only workspaces its key covers
        if kind in ("unknown-flood", "missing-topic"):
            base["caller"] = {"session_id": f"nobody-{rid}"}
            base["tool"], base["arguments"] = "session_trace", {}
            if kind == "missing-topic":
                base["reply_to"] = f"sessionq.replies.nx-{self.rng.randrange(1000)}"
            base["caller"]["token"] = self.signer.sign(base, own)
            self.recent.append(orjson.dumps(base))
            return base, own, kw
        if kind == "replay" and self.recent:
            return self.rng.choice(self.recent), own, kw
        base["caller"]["token"] = self.signer.sign(base, cwd)  # a key not covering cwd
        if kind == "future":
            base["caller"] = {"session_id": "nobody-" + rid}
            kw["timestamp_ms"] = int(time.time() * 1000) + 120_000
        elif kind == "forged":
            base["caller"]["token"] = "x.y.z"
        elif kind == "rebound":  # another request's token
            base["caller"]["token"] = self.signer.sign({**base, "id": "other-" + rid}, cwd)
        elif kind == "reply_to":
            base["reply_to"] = self.rng.choice(["sessionq.events", "__consumer_offsets"])
        elif kind == "huge":
            base["arguments"] = {"query": "a " * 32768}
        elif kind == "blob":  # just under the record bound: parsed, then INVALID_ARGS
            base["arguments"] = {"query": "error", "pad": "b" * 900_000}
        elif kind == "deep":  # 2,000 levels: written by hand, orjson refuses to
            base["arguments"] = {"query": "x", "extra": "DEEP"}
            text = orjson.dumps(base).replace(b'"DEEP"', b"[" * 2000 + b"1" + b"]" * 2000)
            return text, cwd, kw
        elif kind == "garbage":
            return b"\xff not json", cwd, kw
        elif kind == "foreign-cancel":
            return (
                {
                    "v": 1,
                    "kind": "cancel",
                    "id": f"good-{uuid.uuid4()}",
                    "reason": "stop",
                    "caller": {"session_id": sid},
                },
                cwd,
                kw,
            )
        elif kind == "fat-cancel":
            return {"v": 1, "kind": "cancel", "id": rid, "reason": "r" * 5_000_000}, cwd, kw
        return base, cwd, kw

    async def run(self, rate: float, active: Any, stop: Any) -> dict[str, int]:
        """Send at ``rate`` while ``active`` is set, until ``stop`` is set."""
        producer = AIOKafkaProducer(
            bootstrap_servers=self.bootstrap, acks=1, max_request_size=8 * 1024 * 1024
        )
        await producer.start()
        refused = 0
        try:
            while not stop.is_set():
                if not active.is_set():
                    await asyncio.sleep(0.05)
                    continue
                start, n_bad = time.monotonic(), 0
                while active.is_set() and not stop.is_set():
                    while n_bad < int((time.monotonic() - start) * rate):
                        value, cwd, kw = self.hostile()
                        raw = value if isinstance(value, bytes) else orjson.dumps(value)
                        try:
                            await producer.send_and_wait(
                                "sessionq.requests", raw, key=cwd.encode(), **kw
                            )
                        except MessageSizeTooLargeError:
                            refused += 1  # the requests topic's 1 MiB bound
                        n_bad += 1
                    await asyncio.sleep(0.002)
        finally:
            await producer.stop()
        return {**self.counts, "refused by the broker": refused}


def hostile_process(
    bootstrap: str,
    key_file: str,
    pool: list[tuple[str, str]],
    rate: float,
    active: Any,
    stop: Any,
    out: Any,
) -> None:
    signer = CallerSigner.from_file("hostile", Path(key_file))
    out.put(asyncio.run(Hostile(bootstrap, signer, pool).run(rate, active, stop)))


async def pinned_offsets(bootstrap: str) -> dict[int, int]:
    """Per partition, end offset - committed offset of the worker group (0 = resolved)."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=GROUP, enable_auto_commit=False
    )
    await consumer.start()
    try:
        await consumer._client.force_metadata_update()
        parts = consumer.partitions_for_topic("sessionq.requests") or set()
        tps = [TopicPartition("sessionq.requests", p) for p in sorted(parts)]
        ends = await consumer.end_offsets(tps)
        out = {}
        for tp in tps:
            committed = await consumer.committed(tp)
            out[tp.partition] = ends[tp] - (committed or 0)
        return out
    finally:
        await consumer.stop()


async def amain(args: argparse.Namespace) -> int:
    tmp = Path(tempfile.mkdtemp(prefix="sessionq-soak-"))
    broker = Broker(tmp / "kafka")
    procs: list[subprocess.Popen[bytes]] = []
    try:
        broker.start()
        env = {**os.environ, "SESSIONQ_BOOTSTRAP": broker.bootstrap}
        subprocess.run(
            [SQ, "topics", "create", "--partitions", "4"], env=env, check=True, capture_output=True
        )
        entries = []
        for kid, prefixes in (("host", ["*"]), ("hostile", ["/home/hostile"])):
            private, public = generate_key_pair()
            (tmp / f"{kid}.key").write_text(private)
            entries.append(keyring_entry(kid, public, prefixes))
        signer = CallerSigner.from_file("host", tmp / "host.key")
        (tmp / "keyring.json").write_text(json.dumps({"keys": entries}))
        data = tmp / "data"
        logs = [(tmp / "indexer.log").open("wb"), (tmp / "worker.log").open("wb")]
        indexer = subprocess.Popen(
            [SQ, "indexer", "--data", str(data), "--metrics-listen", ""], env=env, stderr=logs[0]
        )
        procs.append(indexer)
        subprocess.run([SQ, "publish", str(CORPUS)], env=env, check=True, capture_output=True)
        while not (data / "store.sqlite3").exists() or len(callers(data)) < 100:
            await asyncio.sleep(0.5)
        await asyncio.sleep(2)
        worker = subprocess.Popen(
            [
                SQ,
                "worker",
                "--data",
                str(data),
                "--group",
                GROUP,
                "--keyring",
                str(tmp / "keyring.json"),
                "--metrics-listen",
                "",
            ],
            env=env,
            stderr=logs[1],
        )
        procs.append(worker)
        await asyncio.sleep(8)  # join the group
        load = Load(broker.bootstrap, signer, callers(data))
        await load.start()
        window = args.window
        windows = max(1, round(args.minutes * 60 / window))
        ctx = multiprocessing.get_context("spawn")
        active, stop, out = ctx.Event(), ctx.Event(), ctx.Queue()
        attacker = ctx.Process(
            target=hostile_process,
            args=(
                broker.bootstrap,
                str(tmp / "hostile.key"),
                load.pool,
                args.hostile_rate,
                active,
                stop,
                out,
            ),
        )
        attacker.start()
        rss_start = vm_rss_mb(worker.pid)
        print(
            f"soak: {windows} x ({window:.0f} s good only, then {window:.0f} s good +"
            f" hostile at {args.hostile_rate}/s), good at {args.rate}/s ...",
            flush=True,
        )
        quiet: list[float] = []
        loud: list[float] = []
        rss_quiet = rss_start
        for n in range(windows):
            quiet += await load.run(window, args.rate)
            rss_quiet = max(rss_quiet, vm_rss_mb(worker.pid))
            active.set()
            loud += await load.run(window, args.rate)
            active.clear()
            print(f"soak: window {n + 1}/{windows} done", flush=True)
        stop.set()
        hostile_counts = await asyncio.to_thread(out.get, True, 120)
        attacker.join(30)
        rss_loud = vm_rss_mb(worker.pid)
        await asyncio.sleep(20)
        rss_after = vm_rss_mb(worker.pid)
        await load.stop()
        # the hostile calls still waiting for callers that never come end at their
        # deadline (60 s at most): offsets are pinned until then, never longer
        drain_start = time.monotonic()
        pinned = await pinned_offsets(broker.bootstrap)
        while any(pinned.values()) and time.monotonic() - drain_start < 120:
            await asyncio.sleep(2)
            pinned = await pinned_offsets(broker.bootstrap)
        drained_s = time.monotonic() - drain_start + 20
        lost = len(load.good) - len(load.latency)
        dup = sum(1 for i in load.good if load.seen.get(i, 0) > 1)
        q50, q99 = _percentile(quiet, 50), _percentile(quiet, 99)
        l50, l99 = _percentile(loud, 50), _percentile(loud, 99)
        print(f"machine: {machine()}")
        print(
            f"good requests: {len(load.good)} sent, {len(load.latency)} answered, {lost} lost;"
            f" good replies duplicated: {dup}"
        )
        print(
            f"pinned offsets (end - committed per partition), {drained_s:.0f} s after the"
            f" hostile load stopped: {pinned}"
        )
        n_hostile = sum(v for k, v in hostile_counts.items() if "refused" not in k)
        print(f"hostile records produced (the refused ones included): {n_hostile} {hostile_counts}")
        print(
            f"peak RSS: indexer {vm_hwm_mb(indexer.pid):.0f} MB,"
            f" worker {vm_hwm_mb(worker.pid):.0f} MB"
        )
        print(
            f"worker RSS: {rss_start:.0f} MB at start,"
            f" {rss_quiet:.0f} MB at most in the good-only windows,"
            f" {rss_loud:.0f} MB right after hostile, {rss_after:.0f} MB 20 s later"
        )
        print(
            f"good p50/p99 without hostile load: {q50:.1f} / {q99:.1f} ms;"
            f" with: {l50:.1f} / {l99:.1f} ms (p99 x{l99 / q99 if q99 else float('nan'):.2f})"
        )
        ok = lost == 0 and dup == 0 and all(v == 0 for v in pinned.values()) and l99 <= 2 * q99
        print("RESULT:", "PASS" if ok else "MISS")
        return 0 if ok else 1
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
        broker.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument(
        "--minutes", type=float, default=10.0, help="of hostile load (and as long good only)"
    )
    ap.add_argument(
        "--window",
        type=float,
        default=60.0,
        help="seconds per window; good-only and hostile windows alternate, so a"
        " change in the machine's load affects both alike",
    )
    ap.add_argument("--rate", type=float, default=50.0, help="good requests per second")
    ap.add_argument("--hostile-rate", type=float, default=50.0, help="hostile records per second")
    return asyncio.run(amain(ap.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
