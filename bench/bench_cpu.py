"""CPU per tool call through ``sessionq serve`` and through the Kafka worker, for a fixed
mix of the five tools, beside a baseline checkout's figure from the same run.

Each side (this tree, and ``--baseline-src`` — a checkout of another commit, e.g.
``git worktree add /tmp/base-7812bbe 7812bbe``) ingests the real corpus
(``shared/corpus/dsh``) into its own data dir with its own code, then runs its own
``sessionq serve`` / ``sessionq worker`` subprocess (``bench.mix.sessionq_argv``: the
checkout first on ``sys.path``). The calls are the same for both sides
(``bench.mix.fixed_mix``: ``--per-tool`` calls of each tool per round, callers and
targets from the corpus' workspaces).

A round sends each tool's calls as one block, for each side in turn (the order of the
sides alternates round by round: this VM's speed drifts by ±25 % within minutes), and
reads the server process's CPU time (utime + stime of all its threads, from
``/proc/<pid>/stat``) before and after each block: CPU per call = the block's CPU / its
calls. The figure per tool is the median over the rounds; "mix" is the mean of the five
tools' medians (every tool weighs the same). The ratio column is this tree / baseline.

* **serve** — ``POST /v1/call`` over one keep-alive HTTP connection, sequentially.
* **kafka** — one local broker (``deploy/kafka/start.sh``), one ``sessionq worker`` per
  side (``--insecure-unauthenticated-callers``: 7812bbe's tokens are not this tree's),
  its own requests topic (4 partitions); one ``SessionqClient`` in this process sends
  the block with ``--concurrency`` calls in flight. ``--keyed`` adds a third worker of
  this tree with a keyring and a signing client (token verification counted; no
  baseline).

Every reply is checked ``ok`` or a tool error the mix can meet (an unknown session in a
foreign workspace never occurs: targets share the caller's workspace). The load
average is printed with every figure.

Run: ``nice .venv/bin/python bench/bench_cpu.py --baseline-src /tmp/base-7812bbe``
(``--ways serve`` for the HTTP side only).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_kafka import (
    Broker,
    Procs,
    _assigned,
    _proc_cpu_seconds,
    create_topics,
    pyspy_summary,
)
from bench.bench_store import _code_fingerprint, machine
from bench.mix import (
    REAL_CORPUS,
    REAL_QUERIES,
    ROOT,
    TOOLS,
    Call,
    checkout,
    corpus_queries,
    fixed_mix,
    sessionq_argv,
)

OUT: Final = ROOT / "bench" / "out"
TARGET_RATIO: Final = 1 / 3


def cpu_seconds(pid: int) -> float:
    """CPU time of every live thread of ``pid`` in ns resolution (the sum of
    ``/proc/<pid>/task/*/schedstat``); the tick-resolution ``/proc/<pid>/stat`` figure
    where schedstat is missing."""
    total, seen = 0, False
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with (
                contextlib.suppress(OSError, ValueError, IndexError),
                open(f"/proc/{pid}/task/{tid}/schedstat") as f,
            ):
                total += int(f.read().split()[0])
                seen = True
    return total / 1e9 if seen else _proc_cpu_seconds(pid)


def _loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')} load {_loadavg()}] {msg}", flush=True)


@dataclass
class Side:
    """One code version under test."""

    name: str
    src: Path | None  # None: this tree
    data: Path
    proc: subprocess.Popen[bytes] | None = None
    port: int = 0
    topic: str = ""
    keyring: Path | None = None
    redaction: str | None = None  # this tree only: --redact-secrets of its writers
    cpu: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))


def ingest(side: Side, corpus: Path) -> None:
    shutil.rmtree(side.data, ignore_errors=True)
    cmd = [*sessionq_argv(side.src), "ingest", str(corpus), "--data", str(side.data)]
    env = {**os.environ, **_redaction_env(side)}
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, env=env)


def _redaction_env(side: Side) -> dict[str, str]:
    """This tree's writers (ingest, serve) with ``side.redaction``; a baseline keeps its
    own defaults (7812bbe has no redaction)."""
    if side.src is None and side.redaction is not None:
        return {"SESSIONQ_REDACT_SECRETS": side.redaction}
    return {}


# ---- serve --------------------------------------------------------------------------------------
def start_serve(side: Side, procs: Procs, tmp: Path, corpus: Path) -> None:
    log_path = tmp / f"serve-{side.name}.log"
    cmd = [
        *sessionq_argv(side.src),
        "serve",
        "--sessions",
        str(corpus),
        "--data",
        str(side.data),
        "--listen",
        "127.0.0.1:0",
        "--log-level",
        "ERROR",
    ]
    side.proc = procs.start(cmd, log_path=log_path, env=_redaction_env(side))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        text = log_path.read_text(errors="replace")
        m = re.search(r"serving on http://127\.0\.0\.1:(\d+)", text)
        if m and "ready:" in text:
            side.port = int(m.group(1))
            return
        if side.proc.poll() is not None:
            raise RuntimeError(f"serve {side.name} exited: {text[-2000:]}")
        time.sleep(0.2)
    raise RuntimeError(f"serve {side.name} not ready: {log_path.read_text()[-2000:]}")


def serve_block(side: Side, calls: Sequence[Call]) -> float:
    """CPU seconds of the serve process for ``calls``, sent one after another."""
    assert side.proc is not None
    conn = http.client.HTTPConnection("127.0.0.1", side.port, timeout=60)
    bodies = [
        json.dumps(
            {"tool": c.tool, "arguments": c.arguments, "caller": {"session_id": c.caller}}
        ).encode()
        for c in calls
    ]
    headers = {"Content-Type": "application/json"}
    conn.request("POST", "/v1/call", bodies[0], headers)  # the connection, then measure
    conn.getresponse().read()
    cpu0 = cpu_seconds(side.proc.pid)
    for body in bodies:
        conn.request("POST", "/v1/call", body, headers)
        reply = json.loads(conn.getresponse().read())
        if not reply.get("ok"):
            side.errors[reply.get("error", {}).get("code", "?")] += 1
    cpu = cpu_seconds(side.proc.pid) - cpu0
    conn.close()
    return cpu


# ---- kafka --------------------------------------------------------------------------------------
def start_worker(
    side: Side, procs: Procs, tmp: Path, bootstrap: str, *, group: str | None = None
) -> None:
    """``side``'s worker (or the echo worker) on ``side.topic``, in ``group`` (default:
    one group per topic)."""
    group = group or f"bench-cpu-{side.topic}"
    log_path = tmp / f"worker-{side.name}.log"
    auth = (
        ["--keyring", str(side.keyring)]
        if side.keyring is not None
        else ["--insecure-unauthenticated-callers"]
    )
    if side.name == "echo":  # the transport floor: sessionq's Worker over a no-op pipeline
        cmd = [sys.executable, str(ROOT / "bench" / "bench_kafka.py"), "_echo", bootstrap]
        env = {"SESSIONQ_REQUESTS_TOPIC": side.topic, "BENCH_GROUP": group}
        side.proc = procs.start(cmd, log_path=log_path, env=env)
        return
    cmd = [
        *sessionq_argv(side.src),
        "worker",
        "--bootstrap",
        bootstrap,
        "--data",
        str(side.data),
        "--group",
        group,
        *auth,
        "--metrics-listen",
        "127.0.0.1:0",
        "--log-level",
        "INFO",
    ]
    env = {"SESSIONQ_REQUESTS_TOPIC": side.topic}
    side.proc = procs.start(cmd, log_path=log_path, env=env)


async def kafka_block(side: Side, client: Any, calls: Sequence[Call], concurrency: int) -> float:
    """CPU seconds of the worker process for ``calls``, ``concurrency`` in flight."""
    assert side.proc is not None
    queue = list(reversed(calls))

    async def one_caller() -> None:
        while queue:
            c = queue.pop()
            reply = await client.call(
                c.tool,
                c.arguments,
                session_id=c.caller,
                routing_key=c.workspace,
                workspace=c.workspace,
                timeout_ms=30_000,
            )
            if not reply.ok:
                side.errors[reply.error.code if reply.error is not None else "?"] += 1

    cpu0 = cpu_seconds(side.proc.pid)
    await asyncio.gather(*(one_caller() for _ in range(concurrency)))
    return cpu_seconds(side.proc.pid) - cpu0


async def wait_assigned(side: Side, log_path: Path) -> None:
    deadline = time.monotonic() + 120
    while _assigned(log_path) != [0, 1, 2, 3]:
        assert side.proc is not None
        if side.proc.poll() is not None:
            raise RuntimeError(f"worker {side.name} exited: {log_path.read_text()[-2000:]}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"worker {side.name} not assigned: {log_path.read_text()[-2000:]}")
        await asyncio.sleep(0.25)


def keyring_for(tmp: Path, workspaces: Sequence[str]) -> tuple[Path, Path]:
    """A host key for every workspace of the mix (``sessionq keys generate``)."""
    keys = tmp / "keys"
    ring = tmp / "keyring.json"
    wss = [arg for w in workspaces for arg in ("--workspace", w)]
    keygen = ["keys", "generate", "--kid", "bench", "--out", str(keys), "--keyring", str(ring)]
    subprocess.run(
        [*sessionq_argv(None), *keygen, *wss],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    return ring, keys / "bench.key"


# ---- profiles -----------------------------------------------------------------------------------
def pyspy_start(
    exe: str | None, pid: int, seconds: float, out: Path
) -> subprocess.Popen[bytes] | None:
    """``py-spy record`` of ``pid``: collapsed stacks of running (not idle) threads,
    the target paused per sample so each stack is exact."""
    if not exe:
        return None
    spy = ["record", "--pid", str(pid), "--duration", str(max(1, int(seconds))), "--rate", "250"]
    return subprocess.Popen(
        [exe, *spy, "--format", "raw", "--nolineno", "--output", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def profile(args: argparse.Namespace, side: Side, out: Path, work: Any) -> dict[str, Any]:
    """py-spy samples of ``side``'s server while ``work()`` runs over and over."""
    assert side.proc is not None
    spy = pyspy_start(args.pyspy, side.proc.pid, args.pyspy_seconds, out)
    end = time.monotonic() + args.pyspy_seconds
    while time.monotonic() < end:
        work()
    return finish_profile(args, spy, out)


def finish_profile(
    args: argparse.Namespace, spy: subprocess.Popen[bytes] | None, out: Path
) -> dict[str, Any]:
    if spy is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            spy.wait(30)
    if args.profile_dir is not None:
        args.profile_dir.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            shutil.copy(out, args.profile_dir / out.name)
    return pyspy_summary(out, top=40)


# ---- rounds -------------------------------------------------------------------------------------
def record(side: Side, way: str, tool: str, cpu: float, n: int) -> None:
    side.cpu[f"{way}:{tool}"].append(1000 * cpu / n)


def summary(sides: Sequence[Side], way: str) -> list[str]:
    """Median CPU ms per call of each tool and the mix, per side; the ratio this/baseline."""
    lines = [f"{way}: CPU ms per call of the server process (median of rounds)"]
    names = [s.name for s in sides]
    ratio = "this" in names and "baseline" in names
    head = f"  {'tool':<22}" + "".join(f" {n:>12}" for n in names)
    lines.append(head + (f" {'this/base':>10}" if ratio else ""))
    for tool in (*TOOLS, "mix"):
        values = {s.name: median_ms(s, way, tool) for s in sides}
        row = f"  {tool:<22}" + "".join(f" {values[n]:>12.3f}" for n in names)
        if ratio and values["baseline"] > 0:
            row += f" {values['this'] / values['baseline']:>10.2f}"
        lines.append(row)
    return lines


def median_ms(side: Side, way: str, tool: str) -> float:
    """A tool's median over the rounds; ``mix``: the mean of the five tools' medians."""
    if tool == "mix":
        return sum(median_ms(side, way, t) for t in TOOLS) / len(TOOLS)
    return statistics.median(side.cpu[f"{way}:{tool}"])


async def amain(args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="bench-cpu-", dir=args.tmp))
    procs = Procs()
    sides = [Side("this", None, tmp / "data-this", redaction=args.redact_secrets)]
    if args.baseline_src is not None:
        sides.append(Side("baseline", args.baseline_src, tmp / "data-baseline"))
    results: dict[str, Any] = {
        "machine": machine(),
        "code": _code_fingerprint(),
        "baseline_src": str(args.baseline_src),
        "per_tool": args.per_tool,
        "rounds": args.rounds,
        "load": [],
    }
    broker: Broker | None = None
    try:
        for s in sides:
            log(f"ingest the real corpus with {s.name}'s code ...")
            ingest(s, args.corpus)
        queries = REAL_QUERIES if args.corpus == REAL_CORPUS else corpus_queries(args.corpus)
        mix = fixed_mix(
            sides[0].data / "store.sqlite3", args.per_tool * args.rounds, seed=1, queries=queries
        )
        lines: list[str] = []
        if "serve" in args.ways:
            for s in sides:
                start_serve(s, procs, tmp, args.corpus)
            for s in sides:  # warm-up: page cache, readers, the first connection
                for tool in TOOLS:
                    serve_block(s, mix[tool][: args.per_tool])
            for r in range(args.rounds):
                order = sides if r % 2 == 0 else list(reversed(sides))
                for s in order:
                    for tool in TOOLS:
                        calls = mix[tool][r * args.per_tool : (r + 1) * args.per_tool]
                        record(s, "serve", tool, serve_block(s, calls), len(calls))
                results["load"].append(_loadavg())
                log(f"serve round {r + 1}/{args.rounds} done")
            for s in sides:
                if args.pyspy:
                    results.setdefault("profiles", {})[f"serve:{s.name}"] = profile(
                        args,
                        s,
                        tmp / f"pyspy-serve-{s.name}.txt",
                        lambda s=s: [serve_block(s, mix[t][: args.per_tool]) for t in TOOLS],
                    )
                assert s.proc is not None
                procs.stop(s.proc)
            lines += summary(sides, "serve")
            lines.append(f"  errors: {', '.join(f'{s.name} {dict(s.errors)}' for s in sides)}")
            log("\n".join(lines))
        if "kafka" in args.ways:
            from indexer.settings import KafkaSettings
            from worker.authn.tokens import CallerSigner
            from worker.host.client import SessionqClient

            for s in sides:
                s.errors.clear()
            broker = Broker(tmp / "kafka")
            broker.start()
            log(f"broker {broker.bootstrap}")
            kafka_sides = list(sides)
            if args.echo:
                kafka_sides.append(Side("echo", None, sides[0].data))
            signer = None
            if args.keyed:
                ring, key = keyring_for(tmp, sorted({c.workspace for c in mix[TOOLS[0]]}))
                keyed = Side("this-keyed", None, sides[0].data, keyring=ring)
                kafka_sides.insert(1, keyed)
                signer = CallerSigner.from_file("bench", key)
            await create_topics(broker.bootstrap, ["sessionq.replies", "sessionq.dlq"])
            for s in kafka_sides:
                s.topic = f"bench.cpu.{s.name}.{uuid.uuid4().hex[:6]}"
                await create_topics(broker.bootstrap, [s.topic])
                start_worker(s, procs, tmp, broker.bootstrap)
            for s in kafka_sides:
                await wait_assigned(s, tmp / f"worker-{s.name}.log")
            kafka = KafkaSettings(bootstrap=broker.bootstrap)
            clients = {}
            for s in kafka_sides:
                clients[s.name] = SessionqClient(
                    kafka,
                    requests_topic=s.topic,
                    signer=signer if s.keyring is not None else None,
                )
                await clients[s.name].start()
            try:
                for s in kafka_sides:
                    for tool in TOOLS:
                        await kafka_block(
                            s, clients[s.name], mix[tool][: args.per_tool], args.concurrency
                        )
                for r in range(args.rounds):
                    order = kafka_sides if r % 2 == 0 else list(reversed(kafka_sides))
                    for s in order:
                        for tool in TOOLS:
                            calls = mix[tool][r * args.per_tool : (r + 1) * args.per_tool]
                            cpu = await kafka_block(s, clients[s.name], calls, args.concurrency)
                            record(s, "kafka", tool, cpu, len(calls))
                    results["load"].append(_loadavg())
                    log(f"kafka round {r + 1}/{args.rounds} done")
                for s in kafka_sides if args.pyspy else ():
                    out = tmp / f"pyspy-kafka-{s.name}.txt"
                    assert s.proc is not None
                    spy = pyspy_start(args.pyspy, s.proc.pid, args.pyspy_seconds, out)
                    end = time.monotonic() + args.pyspy_seconds
                    while time.monotonic() < end:
                        for tool in TOOLS:
                            await kafka_block(
                                s, clients[s.name], mix[tool][: args.per_tool], args.concurrency
                            )
                    results.setdefault("profiles", {})[f"kafka:{s.name}"] = finish_profile(
                        args, spy, out
                    )
            finally:
                for c in clients.values():
                    await c.stop()
            k_lines = summary(kafka_sides, "kafka")
            k_lines.append(
                f"  errors: {', '.join(f'{s.name} {dict(s.errors)}' for s in kafka_sides)}"
            )
            log("\n".join(k_lines))
            lines += k_lines
            sides = kafka_sides
        results["sides"] = {s.name: {k: v for k, v in s.cpu.items()} for s in sides}
        results["report"] = lines
        results["target"] = f"mix CPU per call <= {TARGET_RATIO:.2f} x baseline"
        return results
    finally:
        procs.kill_all()
        if broker is not None:
            broker.stop()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline-src", type=checkout, default=None)
    ap.add_argument(
        "--corpus",
        type=Path,
        default=REAL_CORPUS,
        help="dsh logs to serve (default: the real corpus; a generated corpus with a "
        "manifest.json gives the Kafka benchmark's queries)",
    )
    ap.add_argument("--ways", default="serve,kafka")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--per-tool", type=int, default=40, help="calls of each tool per round")
    ap.add_argument("--concurrency", type=int, default=4, help="Kafka calls in flight")
    ap.add_argument("--keyed", action="store_true", help="also a worker with a keyring")
    ap.add_argument("--echo", action="store_true", help="also the no-op pipeline's worker")
    ap.add_argument(
        "--redact-secrets",
        choices=("on", "off"),
        default=None,
        help="this tree's redaction (default: its own, on); off reads as 7812bbe did",
    )
    ap.add_argument("--pyspy", default=None, help="py-spy executable: profile each server")
    ap.add_argument("--pyspy-seconds", type=float, default=20.0)
    ap.add_argument("--profile-dir", type=Path, default=None, help="keep py-spy's stacks here")
    ap.add_argument("--tmp", type=Path, default=None)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--out", type=Path, default=OUT / "results-cpu.json")
    args = ap.parse_args(argv)
    args.ways = args.ways.split(",")
    log(f"bench_cpu: ways {args.ways}, {args.rounds} rounds x {args.per_tool} calls per tool")
    results = asyncio.run(amain(args))
    print_and_save(results, args.out, extra=f"; load per round {results['load']}")
    return 0


def print_and_save(results: dict[str, Any], out: Path, *, extra: str = "") -> None:
    """The machine line and the report on stdout, the whole results as JSON at ``out``."""
    m = results["machine"]
    print(
        f"machine: nproc={m['nproc']} ram={m['ram_gib']} GiB python={m['python']}; "
        f"code {results['code'].get('git_head')}; baseline {results['baseline_src']}{extra}"
    )
    print("\n".join(results["report"]))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
