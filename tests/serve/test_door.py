"""What a newcomer gets wrong, met at the door of ``serve`` and ``mcp`` (real processes):
one line naming the cause and the fix, exit status 2, before any work; a FIFO in a
watched tree is skipped with one note; SIGTERM and SIGINT stop either command within
5 s, whatever it is doing, without a traceback."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.data_paths import REPO_ROOT
from tests.fixtures.mcp import subprocess_env
from tests.fixtures.processes import run
from worker.devtools.demo_corpus import write_demo_corpus

STOP_WITHIN_S = 5.0
ANY_PORT = "127.0.0.1:0"


def sessionq(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "-m", "worker", *args], env=subprocess_env(), timeout=timeout)


def one_line(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_a_missing_sessions_path_is_one_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    one_line(
        sessionq("serve", "--sessions", "/nope", "--data", str(data)),
        "sessionq serve: --sessions /nope: no such file or directory",
    )
    typo = tmp_path / ".claude" / "projectz"
    one_line(
        sessionq("mcp", "--data", str(data), "--sessions", str(typo)),
        f"sessionq mcp: --sessions {typo}: no such file or directory",
    )
    assert not data.exists(), "work started before the check"


@pytest.fixture
def busy_port() -> object:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    yield sock.getsockname()[1]
    sock.close()


def test_a_busy_port_is_one_line_before_any_work(tmp_path: Path, busy_port: int) -> None:
    demo = write_demo_corpus(tmp_path / "demo", 8, seed=3).root
    data = tmp_path / "data"
    listen = f"127.0.0.1:{busy_port}"
    one_line(
        sessionq("serve", "--sessions", str(demo), "--data", str(data), "--listen", listen),
        f"--listen {listen}: the address is already in use",
        "--listen HOST:PORT",
    )
    one_line(
        sessionq(
            "mcp",
            "--transport",
            "http",
            "--listen",
            listen,
            "--sessions",
            str(demo),
            "--data",
            str(data),
        ),
        f"--listen {listen}: the address is already in use",
    )
    assert not data.exists(), "the logs were read before the port was checked"


def test_an_unusable_data_dir_is_one_line(tmp_path: Path) -> None:
    demo = write_demo_corpus(tmp_path / "demo", 8, seed=3).root
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory")
    one_line(
        sessionq("serve", "--sessions", str(demo), "--data", str(a_file), "--listen", ANY_PORT),
        f"--data {a_file} is a file, not a directory",
    )
    someones = tmp_path / "home"
    someones.mkdir()
    (someones / "notes.txt").write_text("a user's own file")
    one_line(
        sessionq("ingest", str(demo), "--data", str(someones)),
        "is a non-empty directory that is not a sessionq data directory",
    )
    assert sorted(os.listdir(someones)) == ["notes.txt"]


def _serve(demo: Path, data: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "worker",
            "serve",
            "--sessions",
            str(demo),
            "--data",
            str(data),
            "--listen",
            "127.0.0.1:0",
        ],
        cwd=REPO_ROOT,
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _stops_in_time(proc: subprocess.Popen[str], sig: signal.Signals) -> str:
    sent = time.monotonic()
    proc.send_signal(sig)
    try:
        _out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"{sig.name} did not stop the process") from None
    took = time.monotonic() - sent
    assert proc.returncode == 0, (proc.returncode, err)
    assert "Traceback" not in err, err
    # The role stops itself within STOP_WITHIN_S (a hard exit 4 s after the signal);
    # the bound here is generous so that a loaded machine cannot fail it.
    assert took < STOP_WITHIN_S * 4, f"{sig.name}: stopped after {took:.1f} s"
    return err


def _wait_for_line(proc: subprocess.Popen[str], needle: str) -> None:
    assert proc.stderr is not None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if needle in line:
            return
        assert line or proc.poll() is None, "the process ended"
    raise AssertionError(f"no line with {needle!r}")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_serve_in_the_middle_of_its_first_pass(
    tmp_path: Path, sig: signal.Signals
) -> None:
    demo = write_demo_corpus(tmp_path / "demo", 600, seed=5).root
    proc = _serve(demo, tmp_path / "data")
    _wait_for_line(proc, "writing")  # the first pass over 600 logs has begun
    _stops_in_time(proc, sig)


def test_a_fifo_in_a_watched_tree_is_skipped_and_serve_still_stops(tmp_path: Path) -> None:
    demo = write_demo_corpus(tmp_path / "demo", 8, seed=3).root
    fifo = next(demo.glob("*/*")) / "session.jsonl"
    fifo.unlink()
    os.mkfifo(fifo)
    proc = _serve(demo, tmp_path / "data")
    assert proc.stdout is not None
    ready = proc.stdout.readline()
    assert ready.startswith("ready:"), ready
    err = _stops_in_time(proc, signal.SIGTERM)
    assert err.count(str(fifo)) == 1, err  # one note for the FIFO, nothing else about it


def test_sigterm_stops_an_mcp_stdio_server(tmp_path: Path) -> None:
    demo = write_demo_corpus(tmp_path / "demo", 8, seed=3).root
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "worker",
            "mcp",
            "--sessions",
            str(demo),
            "--data",
            str(tmp_path / "data"),
            "--caller",
            "anyone",
        ],
        cwd=REPO_ROOT,
        env=subprocess_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # a window's server is a front: it says which daemon serves it once connected
    _wait_for_line(proc, "served by the MCP daemon")  # stdin stays open, as an agent keeps it
    _stops_in_time(proc, signal.SIGTERM)
