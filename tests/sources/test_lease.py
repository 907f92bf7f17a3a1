"""The writer lease of a data dir (``indexer.store.lease``): one writer at a time across
processes, released by the kernel when its holder dies, handed over to a one-shot writer
that waits. Holders in other processes are real processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from indexer.store.lease import DataDirBusyError, WriterLease
from tests.data_paths import REPO_ROOT
from tests.fixtures.waiting import wait_for

HOLD = """
import sys, time
from pathlib import Path
from indexer.store.lease import WriterLease
lease = WriterLease(Path(sys.argv[1]), sys.argv[2])
assert lease.try_acquire()
print("held", flush=True)
time.sleep(600)
"""


def _holder(data: Path, role: str = "serve") -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(data), role],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_one_writer_at_a_time_across_processes(tmp_path: Path) -> None:
    proc = _holder(tmp_path, "mcp")
    try:
        lease = WriterLease(tmp_path, "serve")
        assert not lease.try_acquire()
        holder = lease.holder()
        assert holder is not None and holder.pid == proc.pid and holder.role == "mcp"
        assert holder.describe() == f"sessionq mcp, pid {proc.pid}"
        with pytest.raises(DataDirBusyError, match=f"is written by sessionq mcp, pid {proc.pid}"):
            WriterLease(tmp_path, "indexer").acquire_or_fail()
    finally:
        proc.kill()
        proc.wait()


def test_a_killed_writer_releases_the_lease(tmp_path: Path) -> None:
    proc = _holder(tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    lease = WriterLease(tmp_path, "serve")
    assert lease.holder() is None
    assert lease.try_acquire()
    lease.release()


def test_a_waiting_one_shot_writer_is_wanted_and_gets_its_turn(tmp_path: Path) -> None:
    standing = WriterLease(tmp_path, "serve")
    assert standing.try_acquire()
    assert not standing.wanted()
    told: list[str] = []
    got: list[bool] = []

    def one_shot() -> None:
        with WriterLease(tmp_path, "ingest").turn(on_wait=lambda h: told.append(h.role)) as held:
            got.append(held)

    thread = threading.Thread(target=one_shot)
    thread.start()
    wait_for(standing.wanted, "the standing writer to see the waiting one")
    wait_for(lambda: told, "the waiting one to be told who holds the lease")
    standing.release()  # ... and hands the lease over between two batches
    thread.join(timeout=60)
    assert got == [True] and told == ["serve"]
    assert not standing.wanted()
    assert standing.try_acquire()  # free again once the turn ended
    standing.release()


def test_a_cancelled_wait_ends_without_the_lease(tmp_path: Path) -> None:
    proc = _holder(tmp_path)
    try:
        with WriterLease(tmp_path, "ingest").turn(cancelled=lambda: True) as held:
            assert held is False
    finally:
        proc.kill()
        proc.wait()
