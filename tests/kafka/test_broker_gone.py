"""The README's Kafka quickstart as a newcomer runs it, then ``deploy/kafka/stop.sh``
under the running indexer and worker: the bootstrap export works as pasted, each role
says once that the broker is gone (a WARNING naming the address; aiokafka's own lines at
most one per 30 s) instead of logging every retry, and SIGTERM still stops both, without
a traceback. Real processes, a real broker of their own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fixtures.waiting import wait_until
from tests.kafka.broker import Broker

pytestmark = pytest.mark.kafka
REPO = Path(__file__).resolve().parents[2]
EXIT_WITHIN_S = 15.0  # the bound is 5 s; generous for a loaded machine


def quickstart_env(kafka_dir: Path) -> dict[str, str]:
    """The environment after the README's export line, run by a shell as pasted."""
    line = next(
        line for line in (REPO / "README.md").read_text().splitlines()
        if line.startswith("export SESSIONQ_BOOTSTRAP=$(cat ")
    )
    line = line.split("#")[0].replace(".sessionq/kafka", str(kafka_dir))
    bootstrap = subprocess.run(
        ["bash", "-c", f"{line} && printf %s \"$SESSIONQ_BOOTSTRAP\""],
        capture_output=True, text=True, check=True,
    ).stdout
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONQ_")}
    return {**env, "SESSIONQ_BOOTSTRAP": bootstrap, "SESSIONQ_METRICS_LISTEN": "",
            "PYTHONUNBUFFERED": "1"}


async def test_a_broker_that_goes_away_is_one_warning_and_sigterm_still_stops(
    own_broker: Broker, tmp_path: Path
) -> None:
    broker, kafka_dir = own_broker, tmp_path / "kafka"
    procs: dict[str, subprocess.Popen[bytes]] = {}
    logs = {name: tmp_path / f"{name}.log" for name in ("indexer", "worker")}
    try:
        env = quickstart_env(kafka_dir)
        assert env["SESSIONQ_BOOTSTRAP"] == broker.bootstrap
        created = subprocess.run(
            [sys.executable, "-m", "worker", "topics", "create", "--partitions", "1"],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False,
        )
        assert created.returncode == 0, created.stderr
        roles = {
            "indexer": ["indexer", "--data", str(tmp_path / "node")],
            "worker": ["worker", "--data", str(tmp_path / "node"),
                       "--insecure-unauthenticated-callers"],
        }
        for name, args in roles.items():
            with logs[name].open("wb") as out:
                procs[name] = subprocess.Popen(
                    [sys.executable, "-m", "worker", *args], cwd=REPO, env=env,
                    stdout=out, stderr=subprocess.STDOUT,
                )
            if name == "indexer":  # the worker needs the store the indexer creates
                await wait_until(lambda: (tmp_path / "node").exists(), timeout=120,
                                 what="the indexer's data dir")
        await wait_until(lambda: "assigned partitions" in logs["worker"].read_text(),
                         timeout=120, what="the worker to join its group")
        broker.stop()  # deploy/kafka/stop.sh on the broker's data dir
        gone = time.monotonic()
        await wait_until(
            lambda: all(f"Kafka at {env['SESSIONQ_BOOTSTRAP']}" in p.read_text()
                        for p in logs.values()),
            timeout=120, what="each role to say the broker is gone",
        )
        for name, proc in procs.items():
            assert proc.poll() is None, f"{name} died: {logs[name].read_text()[-2000:]}"
            proc.send_signal(signal.SIGTERM)
            started = time.monotonic()
            proc.wait(timeout=EXIT_WITHIN_S)
            print(f"{name} exited {time.monotonic() - started:.2f} s after SIGTERM")
        window = time.monotonic() - gone
        for path in logs.values():
            text = path.read_text()
            assert "Traceback" not in text and " ERROR " not in text, text[-3000:]
            lines = [line for line in text.splitlines() if " sessionq.kafka: " in line]
            gone_lines = [line for line in lines if "is unreachable" in line]
            assert len(gone_lines) == 1, lines  # the change of state, once
            said = [line for line in lines if line not in gone_lines]  # aiokafka's, throttled
            assert len(said) <= 1 + window // 30, said
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
