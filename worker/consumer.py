"""The Kafka worker: a consumer-group member that answers tool calls.

One request reads as one pipeline (``Worker.handle``): decode -> deadline -> read-your-
writes wait -> tool call (caller -> arguments -> authorization -> query -> rendering) ->
exactly one reply, produced idempotently (acks=all) to ``reply_to`` with key = request id
and a ``correlation_id`` header. A request offset is committed only after its reply (or
dead letter) is acknowledged: delivery is at-least-once, so a host may see a reply twice
after a rebalance and drops duplicates by id.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from indexer.consumer import dead_letter
from indexer.kafka import InRecord
from indexer.metrics import Metrics
from indexer.query.protocol import QueryService
from indexer.settings import KafkaSettings
from worker.deadline import CancelToken, Deadline
from worker.envelopes import (
    CallerRef,
    CancelRequest,
    EnvelopeError,
    InvalidRequestError,
    Reply,
    ToolRequest,
    decode_request,
    error_reply,
    reply_for,
)
from worker.execution import ExecutionGates
from worker.handler import Caller, ToolReply, ToolService
from worker.kafka import GroupSource, Producer
from worker.offsets import OffsetTracker
from worker.settings import WorkerSettings

log = logging.getLogger("sessionq.worker")
EARLY_CANCELS = 10_000
RYW_POLL_S = 0.01
KNOWN_TOOLS = frozenset(
    {
        "session_search",
        "session_event_search",
        "session_trace",
        "session_event_trace",
        "session_event_read",
    }
)


@dataclass(slots=True)
class WorkerCounters:
    requests: dict[tuple[str, str], int] = field(default_factory=dict)  # (tool, outcome)
    latencies_ms: list[float] = field(default_factory=list)
    shed: int = 0
    dead_lettered: int = 0
    cancels: int = 0

    def count(self, tool: str, outcome: str, latency_ms: float) -> None:
        key = (tool, outcome)
        self.requests[key] = self.requests.get(key, 0) + 1
        self.latencies_ms.append(latency_ms)
        if len(self.latencies_ms) > 10_000:
            del self.latencies_ms[:5_000]


def deadline_for(record_ms: int, budget_ms: int) -> Deadline:
    """``record timestamp + budget`` expressed on the monotonic clock."""
    age_s = time.time() - record_ms / 1000.0
    return Deadline.after(budget_ms, start=time.monotonic() - age_s)


class Worker:
    """Answers requests from the requests topic; several processes form one group."""

    def __init__(
        self,
        settings: WorkerSettings,
        kafka: KafkaSettings,
        service: QueryService,
        tools: ToolService,
        *,
        client_id: str = "sessionq-worker",
        metrics: Metrics | None = None,
    ) -> None:
        self.settings = settings
        self.kafka = kafka
        self.service = service
        self.tools = tools
        self.source = GroupSource(
            kafka.bootstrap, kafka.requests_topic, settings.group, client_id=client_id
        )
        self.producer = Producer(kafka.bootstrap, client_id=f"{client_id}-replies")
        self.counters = WorkerCounters()
        self.metrics = metrics if metrics is not None else Metrics("worker")
        self.gates = ExecutionGates()
        self.offsets = OffsetTracker()
        self._tokens: dict[str, CancelToken] = {}
        self._early_cancels: OrderedDict[str, Any] = OrderedDict()
        self._tasks: set[asyncio.Task[None]] = set()
        self._slots = asyncio.Semaphore(settings.max_in_flight)
        self._stopping = asyncio.Event()
        self.assigned: list[int] = []

    # ---- lifecycle ----------------------------------------------------------------------------
    async def start(self) -> None:
        await self.producer.start()
        await self.source.start(self._on_revoked, self._on_assigned)

    async def _on_revoked(self, partitions: list[int]) -> None:
        await self._commit()
        self.offsets.forget(partitions)
        self.assigned = [p for p in self.assigned if p not in partitions]

    async def _on_assigned(self, partitions: list[int]) -> None:
        self.assigned = sorted(set(self.assigned) | set(partitions))
        log.info("assigned partitions %s", self.assigned)

    async def stop(self) -> None:
        self._stopping.set()

    async def close(self) -> None:
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        with contextlib.suppress(Exception):
            await self._commit()
        await self.source.stop()
        await self.producer.stop()

    async def run(self, *, timeout: float | None = None) -> None:
        """Serve until stopped (or ``timeout`` seconds, for tests)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        last_commit = time.monotonic()
        while not self._stopping.is_set():
            if deadline is not None and time.monotonic() >= deadline:
                break
            for record in await self.source.poll(timeout_ms=100, max_records=100):
                await self._slots.acquire()
                self.offsets.started(record.partition, record.offset)
                task = asyncio.create_task(self._guarded(record))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            if time.monotonic() - last_commit >= 0.2:
                await self._commit()
                last_commit = time.monotonic()

    async def _commit(self) -> None:
        offsets = self.offsets.committable()
        if offsets:
            try:
                await self.source.commit(offsets)
            except Exception as exc:  # a rebalance in progress; the next commit retries
                log.warning("request offset commit failed: %s", exc)

    # ---- one record ---------------------------------------------------------------------------
    async def _guarded(self, record: InRecord) -> None:
        try:
            await self.handle(record)
        except Exception:
            # handle() replies or dead-letters every outcome; reaching here means the
            # broker refused the reply. The offset stays uncommitted, so it is redelivered.
            log.exception(
                "request %s[%d]@%d was not answered", record.topic, record.partition, record.offset
            )
            return
        finally:
            self._slots.release()
        self.offsets.finished(record.partition, record.offset)

    async def handle(self, record: InRecord) -> None:
        """decode -> cancel | (deadline -> read-your-writes -> tool call) -> one reply."""
        try:
            request = decode_request(record.value)
        except InvalidRequestError as bad:
            await self._reply(bad.reply_to, error_reply(bad.request_id, "INVALID_ARGS", bad.reason))
            return
        except EnvelopeError as exc:
            self.counters.dead_lettered += 1
            self.metrics.dlq_records.labels("requests").inc()
            await self.producer.send(
                self.kafka.dlq_topic,
                dead_letter(record, str(exc), "SESSIONQ_INVALID_REQUEST"),
                key=record.key,
            )
            return
        if isinstance(request, CancelRequest):
            self._cancel(request)
            return
        await self._answer(request, record)

    def _cancel(self, request: CancelRequest) -> None:
        self.counters.cancels += 1
        token = self._tokens.get(request.id)
        if token is not None:
            token.cancel(request.reason)
            return
        self._early_cancels[request.id] = request.reason
        while len(self._early_cancels) > EARLY_CANCELS:
            self._early_cancels.popitem(last=False)

    def _budget_ms(self, request: ToolRequest) -> int:
        own = self.tools.budget_ms(request.tool) or self.settings.max_timeout_ms
        asked = request.timeout_ms if request.timeout_ms is not None else own
        return min(asked, own, self.settings.max_timeout_ms)

    async def _answer(self, request: ToolRequest, record: InRecord) -> None:
        started = time.perf_counter()
        deadline = deadline_for(record.timestamp_ms, self._budget_ms(request))
        token = CancelToken()
        if request.id in self._early_cancels:
            token.cancel(self._early_cancels.pop(request.id))
        if deadline.expired():
            self.counters.shed += 1
            self.metrics.deadline_sheds.inc()
            reply = error_reply(request.id, "TOOL_TIMEOUT", deadline.failure().message)
        else:
            self._tokens[request.id] = token
            self.metrics.in_flight.inc()
            try:
                reply = await self._call(request, token, deadline)
            finally:
                self._tokens.pop(request.id, None)
                self.metrics.in_flight.dec()
        outcome = "ok" if reply.ok else (reply.error.code if reply.error else "error")
        elapsed_ms = (time.perf_counter() - started) * 1000
        self.counters.count(request.tool, outcome, elapsed_ms)
        tool_label = request.tool if request.tool in KNOWN_TOOLS else "unknown"
        self.metrics.requests.labels(tool_label, outcome).inc()
        self.metrics.request_seconds.labels(tool_label).observe(elapsed_ms / 1000)
        await self._reply(request.reply_to, reply)

    async def _call(self, request: ToolRequest, token: CancelToken, deadline: Deadline) -> Reply:
        caller = request.caller
        waits = caller is not None and caller.session_id is not None and caller.min_seq is not None
        if waits and not await self._caught_up(caller, deadline, token):  # type: ignore[arg-type]
            if token.failure is not None:
                return reply_for(
                    request.id, ToolReply(error=token.failure, cancel_reason=token.reason)
                )
            return error_reply(request.id, "TOOL_TIMEOUT", deadline.failure().message)
        who = (
            Caller(caller.session_id, caller.step_seq)
            if caller is not None and caller.session_id is not None
            else None
        )
        async with self.gates.run(who.session_id if who else "", request.tool):
            result = await self.tools.call(
                request.tool, request.arguments, who, token=token, deadline=deadline
            )
        return reply_for(request.id, result)

    async def _caught_up(self, caller: CallerRef, deadline: Deadline, token: CancelToken) -> bool:
        """Read-your-writes: wait until the caller's log is applied through ``min_seq``."""
        assert caller.session_id is not None and caller.min_seq is not None
        while True:
            last = await asyncio.to_thread(self.service.last_seq, caller.session_id)
            if last is not None and last >= caller.min_seq:
                return True
            if deadline.expired() or token.failure is not None:
                return False
            await asyncio.sleep(RYW_POLL_S)

    async def _reply(self, topic: str, reply: Reply) -> None:
        await self.producer.send(
            topic,
            reply.encode(),
            key=reply.id.encode(),
            headers=[("correlation_id", reply.id.encode())],
        )
