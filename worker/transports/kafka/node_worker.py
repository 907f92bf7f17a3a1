"""The request side of a partitioned node: the Kafka worker (``worker.transports.kafka.worker``:
admission, reply topics, one reply per request, offsets committed after it) with one
pipeline per ready partition instead of one for the whole replica.

A request on requests partition p is answered by partition p's pipeline, over p's store
(``indexer.query.partitioned``); all pipelines share the node's admission shares, running
slots and keyring. Its routing is judged in step 3 of the pipeline, right after the
caller's token is verified (``route``): its workspace key must route to p with Kafka's
default partitioner, and its caller's workspace must live in p; else it is answered
``SESSION_QUERY_MISROUTED`` at once (a host whose partitioner differs would otherwise
wait for a caller that never arrives here). Only an authenticated caller is told so, and
only about what it may know: the key it sent and the workspace its own token names. An
unauthenticated request gets the pipeline's one ``CALLER_UNAUTHENTICATED`` refusal
whatever its caller id and key, so no answer tells which session ids exist or where;
without a keyring (every caller trusted) the caller's workspace is the lineage's. A
request whose partition stopped being served between fetch and answer gets
``SESSION_QUERY_BUSY`` (retry) before any check, as it depends on nothing the request
names: its offset is resolved, and the partition's new owner answers the host's retry.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from pathlib import Path

from indexer.kafka.client import InRecord
from indexer.lineage.entry import SESSION_KEY_PREFIX
from indexer.lineage.table import LineageTable
from indexer.metrics import Metrics
from indexer.query.partitioned import PartitionQueryService
from worker.authn.principal import Principal
from worker.calls.pipeline import Pipeline
from worker.calls.tool_call import ToolCall
from worker.contract.envelopes import Reply, ToolRequest, error_reply
from worker.contract.errors import BUSY, UNSERVED_MESSAGE, misrouted
from worker.settings import AnsweringSettings
from worker.transports.kafka.offsets import RequestSource
from worker.transports.kafka.worker import Worker

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
        self.pipelines[partition] = self.new_pipeline(service, partial(self.route, partition))

    def unserve(self, partition: int) -> None:
        """Stop answering ``partition`` at once (calls in flight finish)."""
        self.pipelines.pop(partition, None)

    def pipeline_for(self, partition: int) -> Pipeline | None:
        return self.pipelines.get(partition)

    def route(self, partition: int, call: ToolCall, principal: Principal | None) -> None:
        """Step 3 of ``partition``'s pipeline, after authentication (module docstring):
        raises ``SESSION_QUERY_MISROUTED`` for a call that is another partition's."""
        why = self.misrouted(partition, call, principal)
        if why is not None:
            log.warning("request %s misrouted: %s", call.id, why)
            raise misrouted(why)

    def misrouted(self, partition: int, call: ToolCall, principal: Principal | None) -> str | None:
        """Why the call is not ``partition``'s (None: it is), judged from what its sender
        may know: the key it sent under, and its caller's workspace as its verified token
        names it (the lineage only without authentication, where every caller is trusted)."""
        p, count = partition, self.partitions
        if count <= 0:
            return None
        if call.workspace_key is not None and (home := self.home(call.workspace_key)) != p:
            return (
                f"this call came on requests partition {p}, but its workspace key routes"
                f" to partition {home} of {count}: publish requests with Kafka's default"
                " partitioner (murmur2), like the events of the same workspace"
            )
        workspace = self._caller_workspace(call, principal)
        if workspace is not None and (home := self.home(workspace)) != p:
            return (
                f"this call came on requests partition {p}, but its caller's workspace lives"
                f" in partition {home} of {count}: key requests by the caller's workspace"
                " (its cwd, or session:<id>)"
            )
        return None

    def _caller_workspace(self, call: ToolCall, principal: Principal | None) -> str | None:
        """The caller's workspace key: its token's, else (no keyring) the lineage's."""
        if principal is not None:
            return principal.workspace or f"{SESSION_KEY_PREFIX}{principal.session_id}"
        if self.authenticator is not None or call.caller is None:
            return None
        entry = self.lineage.get(call.caller.session_id)
        return entry.workspace if entry is not None else None

    async def answer(self, record: InRecord, request: ToolRequest) -> Reply:
        """The partition's pipeline (whose step 3 judges the routing), or ``BUSY`` while
        this node does not serve the partition."""
        if record.partition not in self.pipelines:
            return error_reply(request.id, BUSY, UNSERVED_MESSAGE)
        return await super().answer(record, request)

    def close_services(self) -> None:
        for service in self.services.values():
            service.close()
        self.services.clear()
