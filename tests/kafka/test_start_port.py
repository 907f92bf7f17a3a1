"""``deploy/kafka/start.sh`` restarted without ``--port`` comes back on the port it used
before for that data dir (``DIR/port``), so clients pointed at it reconnect; a
remembered port taken by another process fails with a clear message."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.kafka.broker import BrokerStartError, start_local_broker

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
