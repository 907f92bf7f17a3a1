"""A queued one-shot writer that stops proceeding (``sessionq ingest`` queued for the
writer lease, then stopped with SIGSTOP as Ctrl-Z does) does not stall a running
``serve`` silently or for good: ``/v1/status`` says what serve waits for and since when,
serve takes the free lease after a bound and says so once in its log (a WARNING naming
the stopped process), indexes meanwhile, and hands the lease over once the ingest runs
again — real processes throughout."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

from indexer.store.lease import WriterLease
from tests.data_paths import CORPUS_DIR, REPO_ROOT
from tests.fixtures.mcp import subprocess_env
from tests.fixtures.waiting import wait_for

DEADLINE_S = 120.0
INGESTED = "examples__acp-agent__text-turn__session.jsonl"
WATCHED = "examples__acp-agent__todo-write__session.jsonl"
SERVING = re.compile(r"serving on (http://127\.0\.0\.1:\d+)")


def status(base: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{base}/v1/status", timeout=30) as response:
        got: dict[str, Any] = json.loads(response.read())
    return got


def spawn(log: Path, *args: str) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "worker", *args],
            cwd=REPO_ROOT,
            env=subprocess_env(SESSIONQ_LOG_LEVEL="INFO"),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGCONT)
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


def test_a_stopped_queued_ingest_does_not_stall_serve(tmp_path: Path) -> None:
    data, watched, logs = tmp_path / "data", tmp_path / "watched", tmp_path / "logs"
    incoming = tmp_path / "incoming"
    for directory in (watched, logs, incoming):
        directory.mkdir()
    shutil.copy(CORPUS_DIR / INGESTED, incoming / INGESTED)
    subprocess.run(  # a data dir, empty ("no session logs found")
        [sys.executable, "-m", "worker", "ingest", str(watched), "--data", str(data)],
        cwd=REPO_ROOT, env=subprocess_env(), capture_output=True, timeout=DEADLINE_S,
    )  # fmt: skip

    # This test process writes the data dir while the ingest queues, then stops it there.
    lease = WriterLease(data, "serve")
    assert lease.try_acquire()
    ingest_log = logs / "ingest.log"
    ingest = spawn(ingest_log, "ingest", str(incoming), "--data", str(data))
    serve_log = logs / "serve.log"
    serve = None
    try:
        wait_for(lambda: "waiting for the writer" in ingest_log.read_text(), "the ingest to queue")
        ingest.send_signal(signal.SIGSTOP)
        serve = spawn(
            serve_log, "serve", "--sessions", str(watched), "--data", str(data),
            "--listen", "127.0.0.1:0",
        )  # fmt: skip
        found = wait_for(lambda: SERVING.search(serve_log.read_text()), "serve to listen")
        base = found.group(1)
        behind_holder = wait_for(
            lambda: (s := status(base))["part"] == "standby" and s, "serve to stand by"
        )
        lease.release()  # free, but the one queued writer is stopped

        wait_for(lambda: status(base)["part"] == "writer", "serve to take the free lease")
        shutil.copy(CORPUS_DIR / WATCHED, watched / WATCHED)
        wait_for(lambda: status(base)["sessions"] >= 1, "serve to index a new log meanwhile")
        stalled = status(base)
        warnings = [
            line
            for line in serve_log.read_text().splitlines()
            if " WARNING " in line and str(ingest.pid) in line
        ]

        ingest.send_signal(signal.SIGCONT)  # it runs again: it gets its turn
        assert ingest.wait(timeout=DEADLINE_S) == 0, ingest_log.read_text()
        wait_for(
            lambda: (s := status(base))["part"] == "writer" and s["sessions"] >= 2,
            "serve to write again, with the ingested session",
        )
        after = status(base)
    finally:
        lease.release()
        stop(ingest)
        if serve is not None:
            stop(serve)
    assert behind_holder["writer"] == f"sessionq serve, pid {os.getpid()}"
    assert behind_holder["waiting_since"] is not None
    assert stalled["queued"] == {"pids": [ingest.pid], "stalled": True}, stalled
    assert len(warnings) == 1, serve_log.read_text()[-3000:]
    assert after["queued"] is None and after["waiting_since"] is None
    assert "Traceback" not in serve_log.read_text()
