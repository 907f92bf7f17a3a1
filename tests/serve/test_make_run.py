"""``make run`` from a clean copy of the repository: ``scripts/run.sh`` writes the demo
corpus, serves it, prints the console URL and example calls once ready; every printed call
succeeds, and an interrupt stops the server and the readiness poller."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from tests.fixtures.processes import clean_copy, run

REPO = Path(__file__).resolve().parents[2]
VENV = Path(sys.executable).parent.parent  # the venv running the tests
START_TIMEOUT = 90.0

pytestmark = pytest.mark.slow


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def pump(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line.rstrip("\n"))
    lines.put(None)


def read_until(lines: queue.Queue[str | None], marker: str, timeout: float) -> list[str]:
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"no {marker!r} within {timeout} s; output so far: {seen}")
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            continue
        if line is None:
            raise AssertionError(f"run.sh ended before {marker!r}; output: {seen}")
        seen.append(line)
        if marker in line:
            return seen


def run_curl(command: str) -> dict[str, Any]:
    """Run a printed ``curl`` line (curl itself when installed, else its urllib twin)."""
    argv = shlex.split(command)
    assert argv[0] == "curl"
    if shutil.which("curl"):
        done = subprocess.run(argv, capture_output=True, timeout=30, check=True)
        reply: dict[str, Any] = json.loads(done.stdout)
        return reply
    url = next(a for a in argv if a.startswith("http://"))
    body = argv[argv.index("-d") + 1].encode()
    request = urllib.request.Request(url, body, {"content-type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=30) as resp:
        reply = json.loads(resp.read())
        return reply


def start_run(
    clone: Path, port: int, *args: str, stderr: Any = subprocess.DEVNULL
) -> tuple[subprocess.Popen[str], queue.Queue[str | None]]:
    """``scripts/run.sh ARGS`` in the clone on ``port``, as ``make run`` starts it (its own
    process group, no SESSIONS), and a queue its stdout lines arrive on."""
    env = {**os.environ, "SESSIONQ_LISTEN": f"127.0.0.1:{port}", "VENV": str(VENV)}
    env.pop("SESSIONQ_SESSIONS", None)
    proc = subprocess.Popen(
        ["bash", "scripts/run.sh", *args],
        cwd=clone,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=pump, args=(proc.stdout, lines), daemon=True).start()
    return proc, lines


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def clone(tmp_path: Path) -> Iterator[Path]:
    if not (VENV / "bin" / "sessionq").is_file():
        pytest.skip(f"no sessionq entry point in {VENV}")
    yield clean_copy(tmp_path / "clone")


def test_run_sh_serves_the_demo_and_prints_working_calls(clone: Path, tmp_path: Path) -> None:
    port = free_port()
    stderr = (tmp_path / "stderr.txt").open("w")
    proc, lines = start_run(clone, port, "", str(tmp_path / "data"), stderr=stderr)
    try:
        output = read_until(lines, "(Ctrl-C stops the server)", START_TIMEOUT)
        assert any(line.startswith("wrote 24 demo sessions") for line in output)
        # The console picks its own caller: the printed URL is the plain one.
        assert f"sessionq console: http://127.0.0.1:{port}/" in output, output
        assert (clone / ".sessionq" / "demo" / ".sessionq-demo.json").is_file()
        curls = [line for line in output if line.startswith("curl ")]
        assert len(curls) >= 3
        for command in curls:
            reply = run_curl(command)
            assert reply["ok"] is True, (command, reply)
            assert not reply["text"].startswith("No prior"), (command, reply["text"])

        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in the terminal does
        assert proc.wait(timeout=30) == 0
        deadline = time.monotonic() + 10
        while group_alive(proc.pid):  # the readiness poller must be gone too
            assert time.monotonic() < deadline, "processes of run.sh outlived it"
            time.sleep(0.05)
    finally:
        if proc.poll() is None or group_alive(proc.pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        stderr.close()
    log = (tmp_path / "stderr.txt").read_text()
    assert f"sessionq serving on http://127.0.0.1:{port}" in log


def test_run_sh_on_a_busy_port_says_so_in_make_s_words(clone: Path) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        env = {**os.environ, "SESSIONQ_LISTEN": f"127.0.0.1:{port}", "VENV": str(VENV)}
        done = run(["bash", "scripts/run.sh"], cwd=clone, env=env, timeout=60)
    assert done.returncode == 2, done
    assert done.stderr.splitlines() == [
        f"run.sh: cannot listen on 127.0.0.1:{port} (Address already in use): pick another"
        " address, e.g. SESSIONQ_LISTEN=127.0.0.1:8766 make run"
    ]
    assert not (clone / ".sessionq").exists()  # no demo written, no data dir made


def test_the_demo_keeps_its_store_apart_from_a_user_s(clone: Path) -> None:
    """``make run`` with no SESSIONS stores the demo in ``.sessionq/demo-data``, so a later
    ``make run SESSIONS=...`` (``.sessionq/data``) never serves demo sessions beside the
    user's."""
    proc, lines = start_run(clone, free_port())
    try:
        read_until(lines, "(Ctrl-C stops the server)", START_TIMEOUT)
        assert (clone / ".sessionq" / "demo-data").is_dir()
        assert not (clone / ".sessionq" / "data").exists()
        os.killpg(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
