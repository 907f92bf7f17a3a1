"""Two processes of one role on one host, neither given ``--metrics-listen``: both start
and serve ``/metrics``, ``/healthz`` and ``/readyz``. The first takes the role's default
port (unless something else holds it); one that finds its default taken serves on the
first free port of the fallback range and says so in one line naming the default and
the port it took. Real ``sessionq`` processes, a real broker."""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path
from typing import Final

import pytest

from tests.fixtures.kafka import UniqueName
from tests.fixtures.stores import build_store
from tests.fixtures.waiting import wait_until
from tests.kafka.harness import product_topics
from tests.kafka.processes import CliProcess

pytestmark = pytest.mark.kafka
DEFAULT_PORT: Final = {"worker": 9465, "node": 9466}
SERVING: Final = re.compile(r"^metrics on [\d.]+:(\d+)$", re.MULTILINE)


def served_port(proc: CliProcess) -> int | None:
    found = SERVING.search(proc.log())
    return int(found.group(1)) if found else None


def healthy(port: int) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"http://127.0.0.1:{port}/healthz", timeout=5) as answer:
        return bool(answer.status == 200)


@pytest.mark.parametrize("role", ["worker", "node"])
async def test_two_processes_of_a_role_on_one_host_both_serve_their_metrics(
    role: str, kafka_bootstrap: str, unique_name: UniqueName, tmp_path: Path
) -> None:
    async with product_topics(kafka_bootstrap, unique_name("ports"), partitions=2) as (
        topics,
        _,
    ):
        env = {**topics.env(), "SESSIONQ_BOOTSTRAP": kafka_bootstrap}
        procs = []
        try:
            for n in (1, 2):
                data = tmp_path / f"{role}{n}"
                if role == "worker":
                    build_store(data, [])
                args = [role, "--data", str(data), "--insecure-unauthenticated-callers",
                        "--group", unique_name("g")]  # fmt: skip
                procs.append(CliProcess(args, tmp_path / f"{role}{n}.log", env=env).start())
                await wait_until(
                    lambda p=procs[-1]: served_port(p) is not None or not p.alive(),
                    timeout=120, what=f"{role} {n} to serve its metrics",
                )  # fmt: skip
            ports = [served_port(p) for p in procs]
            assert None not in ports, [p.log()[-2000:] for p in procs]
            assert ports[0] != ports[1]
            for proc, port in zip(procs, ports, strict=True):
                assert proc.alive(), proc.log()[-2000:]
                assert port is not None and healthy(port)
                if port != DEFAULT_PORT[role]:
                    said = [line for line in proc.log().splitlines() if "is taken" in line]
                    assert len(said) == 1, proc.log()[-2000:]
                    assert f"0.0.0.0:{DEFAULT_PORT[role]} is taken" in said[0], said
                    assert f":{port}" in said[0] and "--metrics-listen" in said[0], said
                assert "Traceback" not in proc.log()
        finally:
            for proc in procs:
                proc.stop()
