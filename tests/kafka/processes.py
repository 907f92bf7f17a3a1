"""The sessionq CLI as real subprocesses (``python -m worker ...``) for the Kafka tests:
output captured to files, signalled by their own pid only, all stopped at test end."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from tests.kafka.harness import Topics

REPO_ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable


@dataclass
class CliProcess:
    """``python -m worker <args>`` with stdout/stderr captured to files."""

    args: list[str]
    log_path: Path
    env: Mapping[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> CliProcess:
        env = dict(os.environ)
        env.update(self.env)
        env["PYTHONUNBUFFERED"] = "1"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [PYTHON, "-m", "worker", *self.args],
                cwd=REPO_ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> int | None:
        """Signal this process (by its own pid) and reap it."""
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=30)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it lingers."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


class Processes:
    """Every CLI subprocess a test starts; all are stopped when the test ends."""

    def __init__(self, tmp_path: Path, topics: Topics) -> None:
        self.tmp_path = tmp_path
        self.topics = topics
        self.started: list[CliProcess] = []

    def spawn(self, name: str, *args: str, env: Mapping[str, str] | None = None) -> CliProcess:
        proc = CliProcess(
            list(args),
            self.tmp_path / "logs" / f"{name}-{len(self.started)}.log",
            # An OS-picked metrics port, so several processes can run side by side.
            env={"SESSIONQ_METRICS_LISTEN": "127.0.0.1:0", **self.topics.env(), **(env or {})},
        )
        self.started.append(proc.start())
        return proc

    def stop_all(self) -> None:
        for proc in self.started:
            proc.stop()


ASSIGNED = re.compile(r"assigned partitions (\[[\d, ]*\])")


def assigned_partitions(log: str) -> list[int] | None:
    """The worker's current partitions: its last ``assigned partitions [...]`` log line."""
    found = ASSIGNED.findall(log)
    return [int(p) for p in orjson.loads(found[-1])] if found else None
