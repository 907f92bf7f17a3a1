"""The request side of a partitioned node: the Kafka worker (``worker.kafka.worker``:
admission, reply topics, one reply per request, offsets committed after it) with one
pipeline per ready partition instead of one for the whole replica.

A request on requests partition p is answered by partition p's pipeline, over p's store
(``indexer.query.partitioned``); all pipelines share the node's admission shares, running
slots and keyring. Before any work (step 1 of ``answer``) a request is checked for its
routing: its workspace key must route to p with Kafka's default partitioner, and a
caller the global lineage knows must live in p; else it is answered
``SESSION_QUERY_MISROUTED`` at once (a host whose partitioner differs would otherwise
wait for a caller that never arrives here). A request whose partition stopped being
served between fetch and answer gets ``SESSION_QUERY_BUSY`` (retry): its offset is
resolved, and the partition's new owner answers the host's retry.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from indexer.kafka.client import InRecord
from indexer.lineage.table import LineageTable
from indexer.metrics import Metrics
from indexer.query.partitioned import PartitionQueryService
from worker.contract.envelopes import Reply, ToolRequest, error_reply, reply_for
from worker.contract.errors import BUSY, MISROUTED, UNSERVED_MESSAGE
from worker.kafka.offsets import RequestSource
from worker.kafka.worker import Worker
from worker.pipeline import Pipeline, ToolCall
from worker.settings import AnsweringSettings

log = logging.getLogger("sessionq.node")


class NodeWorker(Worker):
    """``Worker`` answering each partition through that partition's pipeline."""

    def __init__(
        self,
        settings: AnsweringSettings,
        *,
        lineage: LineageTable,
        home: Callable[[str], int],
        source: RequestSource,
        metrics: Metrics,
    ) -> None:
        super().__init__(settings, None, client_id="sessionq-node", metrics=metrics, source=source)
        self.lineage = lineage
        self.home = home
        self.partitions = 0
        self.services: dict[int, PartitionQueryService] = {}
        self.pipelines: dict[int, Pipeline] = {}

    def serve(self, partition: int, data_dir: Path) -> None:
        """Partition ``partition`` is ready: answer its requests from now on."""
        service = self.services.get(partition)
        if service is None:
            service = PartitionQueryService(
                data_dir, partition=partition, lineage_table=self.lineage, home=self.home
            )
            self.services[partition] = service
        self.pipelines[partition] = self.new_pipeline(service)

    def unserve(self, partition: int) -> None:
        """Stop answering ``partition`` at once (calls in flight finish)."""
        self.pipelines.pop(partition, None)

    def pipeline_for(self, partition: int) -> Pipeline | None:
        return self.pipelines.get(partition)

    def misrouted(self, record: InRecord, request: ToolRequest) -> str | None:
        """Why the request is not this partition's (None: it is)."""
        p, count = record.partition, self.partitions
        if count <= 0:
            return None
        if record.key is not None:
            key = record.key.decode("utf-8", "replace")
            home = self.home(key)
            if home != p:
                return (
                    f"this call came on requests partition {p}, but its workspace key routes"
                    f" to partition {home} of {count}: publish requests with Kafka's default"
                    " partitioner (murmur2), like the events of the same workspace"
                )
        caller = request.caller.session_id if request.caller is not None else None
        entry = self.lineage.get(caller) if caller else None
        if entry is not None and self.home(entry.workspace) != p:
            return (
                f"this call came on requests partition {p}, but its caller's workspace lives"
                f" in partition {self.home(entry.workspace)} of {count}: key requests by the"
                " caller's workspace (its cwd, or session:<id>)"
            )
        return None

    async def answer(self, record: InRecord, request: ToolRequest) -> Reply:
        """1. routing, 2. the partition's pipeline (module docstring)."""
        why = self.misrouted(record, request)
        if why is not None:
            log.warning("request %s misrouted: %s", request.id, why)
            return error_reply(request.id, MISROUTED, why)
        pipeline = self.pipelines.get(record.partition)
        if pipeline is None:
            return error_reply(request.id, BUSY, UNSERVED_MESSAGE)
        key = record.key.decode("utf-8", "replace") if record.key is not None else None
        call = ToolCall.from_request(request, sent_ms=record.timestamp_ms, workspace_key=key)
        return reply_for(request.id, await pipeline.answer(call))

    def close_services(self) -> None:
        for service in self.services.values():
            service.close()
        self.services.clear()
