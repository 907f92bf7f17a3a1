"""The long-running roles' event loop (``worker.cli.runtime.run_loop``): uvloop unless
``--event-loop asyncio`` / ``SESSIONQ_EVENT_LOOP=asyncio`` says otherwise, and
``serve`` answers a call on either."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import uvloop

from tests.worker.test_cli import REPO, sessionq
from worker.cli.runtime import run_loop
from worker.settings import ServeSettings


async def _loop_type() -> type[asyncio.AbstractEventLoop]:
    return type(asyncio.get_running_loop())


def test_run_loop_runs_on_the_chosen_loop() -> None:
    assert issubclass(run_loop(_loop_type(), "uvloop"), uvloop.Loop)
    standard = run_loop(_loop_type(), "asyncio")
    assert not issubclass(standard, uvloop.Loop)
    assert issubclass(standard, asyncio.BaseEventLoop)


def test_uvloop_is_the_default_and_the_variable_chooses(monkeypatch: pytest.MonkeyPatch) -> None:
    needed = {"sessions": [Path(".")], "data": Path("data")}
    monkeypatch.delenv("SESSIONQ_EVENT_LOOP", raising=False)
    assert ServeSettings(**needed).event_loop == "uvloop"
    monkeypatch.setenv("SESSIONQ_EVENT_LOOP", "asyncio")
    assert ServeSettings(**needed).event_loop == "asyncio"


def test_an_unknown_loop_is_bad_usage() -> None:
    result = sessionq("serve", "--event-loop", "trio", "--sessions", ".")
    assert result.returncode == 2
    assert "--event-loop" in result.stderr and "invalid choice" in result.stderr


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_serve_answers_on_either_loop(tmp_path: Path, loop: str) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    log = tmp_path / "serve.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONQ_")}
    argv = [sys.executable, "-m", "worker", "serve", "--sessions", str(sessions)]
    argv += ["--data", str(tmp_path / "data"), "--listen", "127.0.0.1:0", "--event-loop", loop]
    with log.open("w") as out:
        proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while "ready:" not in log.read_text() and proc.poll() is None:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        text = log.read_text()
        port = int(text.split("serving on http://127.0.0.1:")[1].split()[0])
        body = json.dumps({"tool": "session_trace", "arguments": {}}).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/call", body, {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            reply = json.loads(response.read())
        assert reply["ok"] is False
        assert reply["error"]["code"].endswith("MISSING_AGENT")
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0
