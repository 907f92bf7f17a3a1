"""Does memory return to its baseline after large requests? (issue 10, "bounded resources")

Starts a real ``sessionq serve`` over the real corpus (bearer token, loopback), reads its
resident memory (VmRSS), then sends rounds of the largest requests it accepts and some it
refuses, and reads VmRSS after each round and once more after a pause:

- 1 MiB bodies (the bound): arguments with a 900 KB string (``INVALID_ARGS``, too large);
- 4,096-character queries (the query bound) that run a real search;
- 4 MB bodies (refused with a JSON 413 before they are read whole);
- 3.9 MB queries, issue 10's reproduction (refused by the body bound now).

The baseline column is the same server before any large request. Prints one table; the
point is that the after-columns stay near the baseline instead of growing per round (the
unbounded version held ~800 MB after the first 3.9 MB query).

Run: ``.venv/bin/python bench/memory_return.py [--rounds 5 --per-round 40]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp
import orjson

from bench.bench_store import machine
from bench.soak import vm_hwm_mb, vm_rss_mb

ROOT: Final = Path(__file__).resolve().parents[1]
SQ: Final = str(ROOT / ".venv" / "bin" / "sessionq")
CORPUS: Final = ROOT.parent / "shared" / "corpus" / "dsh"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def caller_id(data: Path) -> str:
    """Any stored session with a workspace (the calls need an authorized caller)."""
    from indexer.query.service import StoreQueryService

    service = StoreQueryService(data)
    try:
        for record in service.filter_sessions([]):
            if record.header.cwd is not None:
                return record.header.id
    finally:
        service.close()
    raise SystemExit("no session with a workspace in the corpus")


async def post(http: aiohttp.ClientSession, url: str, body: bytes) -> tuple[int, str]:
    async with http.post(url, data=body, headers={"Content-Type": "application/json"}) as r:
        payload: Any = await r.json(content_type=None)
        code = payload.get("error", {}).get("code") if isinstance(payload, dict) else None
        return r.status, "ok" if code is None else str(code)


async def amain(args: argparse.Namespace) -> int:
    tmp = Path(tempfile.mkdtemp(prefix="sessionq-memory-"))
    token = secrets.token_urlsafe(32)
    (tmp / "token").write_text(token)
    port = free_port()
    proc = subprocess.Popen(
        [
            SQ,
            "serve",
            "--sessions",
            str(CORPUS),
            "--data",
            str(tmp / "data"),
            "--listen",
            f"127.0.0.1:{port}",
            "--token-file",
            str(tmp / "token"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=(tmp / "serve.log").open("wb"),
    )
    base = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {token}"}
    try:
        async with aiohttp.ClientSession(headers=headers) as http:
            for _ in range(600):
                try:
                    async with http.get(f"{base}/readyz") as r:
                        if (await r.json()).get("ready"):
                            break
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.1)
            caller = {"session_id": caller_id(tmp / "data")}
            small = orjson.dumps(
                {"tool": "session_search", "arguments": {"query": "error"}, "caller": caller}
            )
            for _ in range(50):  # warm: the server's steady state, not its first touch
                await post(http, f"{base}/v1/call", small)
            await asyncio.sleep(1)
            baseline = vm_rss_mb(proc.pid)
            kinds = {
                "1 MiB body": orjson.dumps(
                    {
                        "tool": "session_search",
                        "caller": caller,
                        "arguments": {"query": "error", "pad": "p" * 900_000},
                    }
                ),
                "4,096-char query": orjson.dumps(
                    {
                        "tool": "session_search",
                        "caller": caller,
                        "arguments": {"query": ("error file test " * 300)[:4096]},
                    }
                ),
                "4 MB body": orjson.dumps(
                    {
                        "tool": "session_search",
                        "caller": caller,
                        "arguments": {"query": "error", "pad": "p" * 4_000_000},
                    }
                ),
                "3.9 MB query": orjson.dumps(
                    {
                        "tool": "session_search",
                        "caller": caller,
                        "arguments": {"query": "error " * 650_000},
                    }
                ),
            }
            print(f"machine: {machine()}")
            print(f"serve RSS baseline after warm-up: {baseline:.0f} MB")
            print("| round | requests | answers | RSS after |")
            print("|---|---|---|---|")
            for round_no in range(1, args.rounds + 1):
                answers: dict[str, int] = {}
                started = time.perf_counter()
                for name, body in kinds.items():
                    for _ in range(args.per_round):
                        status, code = await post(http, f"{base}/v1/call", body)
                        label = f"{name}: {status} {code}"
                        answers[label] = answers.get(label, 0) + 1
                took = time.perf_counter() - started
                shown = "; ".join(f"{k} ×{v}" for k, v in answers.items())
                print(
                    f"| {round_no} | {args.per_round * len(kinds)} in {took:.1f} s | {shown} |"
                    f" {vm_rss_mb(proc.pid):.0f} MB |"
                )
            await asyncio.sleep(args.pause)
            after = vm_rss_mb(proc.pid)
            print(
                f"serve RSS {args.pause:.0f} s after the last round: {after:.0f} MB"
                f" (baseline {baseline:.0f} MB, x{after / baseline:.2f});"
                f" peak {vm_hwm_mb(proc.pid):.0f} MB"
            )
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--per-round", type=int, default=40, help="requests of each kind per round")
    ap.add_argument("--pause", type=float, default=5.0, help="seconds before the last reading")
    os.environ.setdefault("SESSIONQ_LOG_LEVEL", "WARNING")
    return asyncio.run(amain(ap.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
