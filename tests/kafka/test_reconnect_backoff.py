"""A broker that goes away is retried with backoff, not hammered: after
``deploy/kafka/stop.sh``, each of ``indexer``, ``worker`` and ``node`` opens few
connections a second (the attempts aiokafka logs at DEBUG, counted over a window once
the backoff had time to grow), says once that the broker is unreachable, and once it is
back (the broker restarted on its port) says so and carries on. Real processes, a real
broker of their own."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Final

import pytest

from tests.fixtures.waiting import wait_until
from tests.kafka.broker import Broker, start_local_broker
from tests.kafka.processes import CliProcess

pytestmark = pytest.mark.kafka
ATTEMPT: Final = "Initiating connection to node"
RAMP_S: Final = 8.0  # after the broker is gone, before counting: the backoff grows
WINDOW_S: Final = 10.0
MOST_PER_S: Final = 2.0  # every client of a role together; unthrottled it is ~25-70


async def test_roles_back_off_while_the_broker_is_gone_and_come_back_with_it(
    own_broker: Broker, tmp_path: Path
) -> None:
    broker, kafka_dir = own_broker, tmp_path / "kafka"
    procs: dict[str, CliProcess] = {}
    try:
        env = {"SESSIONQ_BOOTSTRAP": broker.bootstrap, "SESSIONQ_METRICS_LISTEN": "",
               "SESSIONQ_LOG_LEVEL": "DEBUG"}  # fmt: skip
        created = CliProcess(["topics", "create", "--partitions", "1"], tmp_path / "topics.log",
                             env=env).start()  # fmt: skip
        assert created.proc is not None and created.proc.wait(timeout=120) == 0, created.log()
        roles = {
            "indexer": ["indexer", "--data", str(tmp_path / "replica")],
            "worker": ["worker", "--data", str(tmp_path / "replica"),
                       "--insecure-unauthenticated-callers"],
            "node": ["node", "--data", str(tmp_path / "node"),
                     "--insecure-unauthenticated-callers"],
        }  # fmt: skip
        for name, args in roles.items():
            procs[name] = CliProcess(args, tmp_path / f"{name}.log", env=env).start()
            if name == "indexer":  # the worker needs the store the indexer creates
                await wait_until(lambda: (tmp_path / "replica" / "store.sqlite3").exists(),
                                 timeout=120, what="the indexer's store")  # fmt: skip
        joined = {"worker": "assigned partitions", "node": "node joined group"}
        for name, proc in procs.items():
            await wait_until(lambda p=proc, n=name: joined.get(n, "") in p.log() or not p.alive(),
                             timeout=120, what=f"the {name} to start")  # fmt: skip
            assert proc.alive(), proc.log()[-3000:]

        broker.stop()  # deploy/kafka/stop.sh on the broker's data dir
        await asyncio.sleep(RAMP_S)  # a measurement window, not a wait for readiness
        before = {name: proc.log().count(ATTEMPT) for name, proc in procs.items()}
        await asyncio.sleep(WINDOW_S)
        rates = {name: (proc.log().count(ATTEMPT) - before[name]) / WINDOW_S
                 for name, proc in procs.items()}  # fmt: skip
        print(f"connection attempts per second while the broker is gone: {rates}")
        for name, proc in procs.items():
            assert proc.alive(), proc.log()[-3000:]
            assert rates[name] <= MOST_PER_S, (name, rates)
            gone = [line for line in proc.log().splitlines() if "is unreachable" in line]
            assert len(gone) == 1, (name, gone)

        again = start_local_broker(kafka_dir)  # the same port: DIR/port
        assert again.bootstrap == broker.bootstrap
        broker = again
        for name, proc in procs.items():
            await wait_until(lambda p=proc: "is reachable again" in p.log(), timeout=60,
                             what=f"the {name} to reconnect")  # fmt: skip
            assert proc.alive(), proc.log()[-3000:]
    finally:
        for proc in procs.values():
            proc.stop()
        broker.stop()
    for name, proc in procs.items():
        assert "Traceback" not in proc.log(), (name, proc.log()[-3000:])

