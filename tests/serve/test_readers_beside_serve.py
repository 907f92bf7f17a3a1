"""Real processes on one data dir while ``sessionq serve`` writes it: ``sessionq stats
--json``, ``sessionq call --data`` and ``sessionq snapshot create`` run as subprocesses
while events are being appended to the watched logs and applied. Each exits 0 with the
right output — stats counts every session, call answers as the store does, a snapshot
restores into a new dir whose stats are the data dir's once the writer has caught up —
and serve keeps running and stops on SIGTERM."""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from indexer.query.service import StoreQueryService
from tests.builders import user
from tests.data_paths import REPO_ROOT
from tests.fixtures.mcp import subprocess_env
from tests.fixtures.processes import run
from tests.fixtures.waiting import wait_for
from worker.calls.pipeline import Pipeline
from worker.devtools.demo_corpus import DemoSummary, write_demo_corpus
from worker.tools.access import Caller

DEADLINE_S = 120.0
SESSIONS = 24
READY = re.compile(r"^ready: .*; console (http://127\.0\.0\.1:\d+)/$", re.M)


def sessionq(*args: str) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "-m", "worker", *args], env=subprocess_env(), timeout=DEADLINE_S)


def ok(*args: str) -> str:
    done = sessionq(*args)
    assert done.returncode == 0, (args, done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout


def stats(data: Path) -> dict[str, Any]:
    got: dict[str, Any] = orjson.loads(ok("stats", "--data", str(data), "--json"))
    return got


class Appender:
    """Appends user events to one watched log from a thread until stopped."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.appended = 0
        self.last_seq = -1
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        last = orjson.loads(self.log.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[-1])
        seq, at = last["seq"], last["time"]
        while not self._stop.wait(0.05):
            seq += 1
            with self.log.open("ab") as f:
                f.write(orjson.dumps(user(seq, f"appended {seq}", time=at + seq)) + b"\n")
            self.appended += 1
            self.last_seq = seq

    def __enter__(self) -> Appender:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


@pytest.fixture
def serving(tmp_path: Path) -> Iterator[tuple[DemoSummary, Path, subprocess.Popen[bytes], Path]]:
    demo = write_demo_corpus(tmp_path / "demo", SESSIONS, seed=7)
    data, out_path, err_path = tmp_path / "data", tmp_path / "serve.out", tmp_path / "serve.err"
    argv = [sys.executable, "-m", "worker", "serve", "--sessions", str(demo.root)]
    argv += ["--data", str(data), "--listen", "127.0.0.1:0"]
    with out_path.open("wb") as out, err_path.open("wb") as err:
        proc = subprocess.Popen(
            argv, cwd=REPO_ROOT, env=subprocess_env(), stdin=subprocess.DEVNULL,
            stdout=out, stderr=err,
        )  # fmt: skip
    try:
        wait_for(lambda: READY.search(out_path.read_text()) or proc.poll() is not None, "ready")
        assert proc.poll() is None, err_path.read_text()
        yield demo, data, proc, err_path
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


def in_process_answer(data: Path, tool: str, arguments: dict[str, Any], caller: str) -> str:
    service = StoreQueryService(data)
    try:
        reply = asyncio.run(Pipeline(service).call(tool, arguments, Caller(caller)))
    finally:
        service.close()
    assert reply.ok, reply
    return reply.text or ""


COMPARED = ("sessions", "events", "documents", "workspaces", "agents", "redactions")


def test_stats_call_and_snapshot_run_beside_a_writing_serve(
    serving: tuple[DemoSummary, Path, subprocess.Popen[bytes], Path], tmp_path: Path
) -> None:
    demo, data, proc, err_path = serving
    roots = [s for s in demo.sessions if s.cwd is not None and not s.subagent]
    reader, written = roots[0], roots[1]
    trace_args = ["session_trace", "{}", "--data", str(data), "--caller", reader.id]
    with Appender(demo.root / written.path) as appender:
        for round_ in range(2):
            first = stats(data)
            assert first["sessions"] == SESSIONS, first
            assert first["events"] >= demo.events
            answer = ok("call", *trace_args)
            assert answer.strip(), "call printed nothing"
            assert answer == in_process_answer(data, "session_trace", {}, reader.id) + "\n"
            made = ok("snapshot", "create", "--data", str(data), "--to", str(tmp_path / "snaps"))
            assert made.startswith(f"snapshot {tmp_path / 'snaps'}/"), made
            restored = tmp_path / f"restored-{round_}"
            ok("snapshot", "restore", "--from", str(tmp_path / "snaps"), "--data", str(restored))
            mid = stats(restored)
            assert mid["sessions"] == SESSIONS
            assert demo.events <= mid["events"] <= demo.events + appender.appended
        wait_for(lambda: appender.appended >= 5, "a few events appended")
    expected = demo.events + appender.appended

    wait_for(lambda: stats(data)["events"] == expected, "serve to apply every appended event")
    assert proc.poll() is None, err_path.read_text()
    final = tmp_path / "final-snaps"
    ok("snapshot", "create", "--data", str(data), "--to", str(final))
    ok("snapshot", "restore", "--from", str(final), "--data", str(tmp_path / "final"))
    live, copy = stats(data), stats(tmp_path / "final")
    assert {k: copy[k] for k in COMPARED} == {k: live[k] for k in COMPARED}
    assert copy["events"] == expected
    seq = appender.last_seq
    newest = in_process_answer(tmp_path / "final", "session_event_read", {"seq": seq}, written.id)
    assert f"appended {seq}" in newest, newest
    assert proc.poll() is None, err_path.read_text()
