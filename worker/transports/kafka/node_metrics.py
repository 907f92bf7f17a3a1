"""A node's per-partition gauges in ``/metrics``: lag, readiness and store size of every
partition it owns or copies, and whether its lineage copy caught up."""

from __future__ import annotations

import os
from pathlib import Path

from prometheus_client import CollectorRegistry, Gauge

from indexer.sources.partitions.set import PartitionSet


def dir_bytes(path: Path) -> int:
    """Bytes of the regular files under ``path``."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name), follow_symlinks=False).st_size
            except OSError:
                continue
    return total


class NodeMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.lag = Gauge(
            "sessionq_node_partition_lag",
            "Events not yet applied, per partition and role (active, standby)",
            ["role", "partition"],
            registry=registry,
        )
        self.ready = Gauge(
            "sessionq_node_partition_ready",
            "1 while an owned partition answers its requests",
            ["partition"],
            registry=registry,
        )
        self.store_bytes = Gauge(
            "sessionq_node_partition_store_bytes",
            "Bytes of a partition's store on this node, per role",
            ["role", "partition"],
            registry=registry,
        )
        self.lineage = Gauge(
            "sessionq_node_lineage_caught_up",
            "1 once the node's copy of the lineage topic caught up",
            registry=registry,
        )

    def update(
        self, partitions: PartitionSet, lag: dict[tuple[str, int], int], lineage_caught_up: bool
    ) -> None:
        for gauge in (self.lag, self.ready, self.store_bytes):
            gauge.clear()
        for (role, p), value in lag.items():
            self.lag.labels(role, str(p)).set(value)
        ready = set(partitions.ready())
        for p in partitions.active:
            self.ready.labels(str(p)).set(1 if p in ready else 0)
        for p, replica in partitions.replicas.items():
            role = "active" if p in partitions.state else "standby"
            self.store_bytes.labels(role, str(p)).set(dir_bytes(replica.data_dir))
        self.lineage.set(1 if lineage_caught_up else 0)
