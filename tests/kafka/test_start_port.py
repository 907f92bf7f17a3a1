"""``deploy/kafka/start.sh`` restarted without ``--port`` comes back on the port it used
before for that data dir (``DIR/port``), so clients pointed at it reconnect; a
remembered port taken by another process fails with a clear message."""

from __future__ import annotations

import re
import socket
import subprocess
from pathlib import Path

import pytest

from tests.kafka.broker import START_SH, BrokerStartError, start_local_broker

pytestmark = pytest.mark.kafka


def test_restart_without_port_reuses_the_port(tmp_path: Path) -> None:
    data = tmp_path / "kafka"
    try:
        first = start_local_broker(data)
    except BrokerStartError as exc:
        pytest.skip(f"no local Kafka broker: {exc}")
    first.stop()
    second = start_local_broker(data)  # the behaviour first: the same address again
    try:
        assert second.bootstrap == first.bootstrap
    finally:
        second.stop()
    port = int(first.bootstrap.rsplit(":", 1)[1])
    assert (data / "port").read_text().strip() == str(port)  # where it is remembered

    # The remembered port taken by something else: a clear failure, not a new port.
    with socket.socket() as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        with pytest.raises(BrokerStartError, match=r"port \d+ .*is taken by another process"):
            start_local_broker(data)


def ephemeral_range() -> tuple[int, int]:
    """The ports this machine gives outgoing connections (their source ports)."""
    low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
    return int(low), int(high)


def test_a_first_start_listens_outside_the_ephemeral_range(tmp_path: Path) -> None:
    """A client reconnecting to a stopped broker takes a source port from the ephemeral
    range; a broker listening inside it could find its port taken on restart."""
    data = tmp_path / "kafka"
    try:
        broker = start_local_broker(data)
    except BrokerStartError as exc:
        pytest.skip(f"no local Kafka broker: {exc}")
    try:
        port = int(broker.bootstrap.rsplit(":", 1)[1])
        config = (data / "server.properties").read_text()
    finally:
        broker.stop()
    controller = int(re.findall(r"CONTROLLER://127\.0\.0\.1:(\d+)", config)[0])
    low, high = ephemeral_range()
    for chosen in (port, controller):
        assert not low <= chosen <= high, (chosen, low, high)


def test_a_taken_port_fails_in_one_line_naming_it_and_how_to_pick_another(
    tmp_path: Path,
) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        done = subprocess.run(
            ["bash", str(START_SH), "--data", str(tmp_path / "kafka"), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"port {port} " in lines[0] and "--port" in lines[0], lines[0]
