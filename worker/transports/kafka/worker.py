"""The Kafka worker: a consumer-group member that answers tool calls.

The worker only moves bytes: it decodes each record, hands a tool request to the
pipeline (``worker.calls.pipeline``: deadline -> wait -> arguments -> caller -> authorization
-> query -> rendering) and produces its one reply idempotently (acks=all) to
``reply_to`` with key = request id and a ``correlation_id`` header. A request offset is
committed only after its reply (or dead letter) is acknowledged: delivery is at-least-
once, so a host may see a reply twice after a rebalance and drops duplicates by id.

Per polled batch: every record is decoded; the batch's unknown reply topics are asked
about in one metadata request (``worker.transports.kafka.reply_topics``); then each record gets its
one reply-topic decision, taken once: a request whose ``reply_to`` is refused by the
allow-list (``SESSIONQ_REPLY_TOPIC_REFUSED``) or does not exist
(``SESSIONQ_REPLY_TOPIC_MISSING``) is dead-lettered before any work, and nothing is ever
produced to it. A record byte-identical to one in flight (a replay, or a re-delivery
while the first copy still runs) joins it: its offset is finished with the first copy's
answer, and it costs neither an admission slot nor a second reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Awaitable
from typing import TypeVar

from indexer.errors import REPLY_FAILED, TopicMissingError, UndeliverableError
from indexer.kafka.client import InRecord, Producer
from indexer.kafka.dead_letter import DLQ_MAX_BYTES, dead_letter
from indexer.metrics import Metrics
from indexer.query.protocol import QueryService
from worker.authn.binding import Binding
from worker.authn.keyring import Keyring
from worker.authn.tokens import CallerAuthenticator
from worker.calls.pipeline import Pipeline
from worker.calls.slots import Shares, Slots
from worker.calls.tool_call import Route, ToolCall
from worker.contract.envelopes import (
    CancelRequest,
    EnvelopeError,
    InvalidRequestError,
    Reply,
    RequestRecord,
    ToolRequest,
    decode_request,
    error_reply,
    reply_for,
)
from worker.contract.errors import TOOL_FAILED, TOOL_FAILED_MESSAGE
from worker.host.topics import warn_of_unequal_partitions
from worker.settings import AnsweringSettings
from worker.transports.kafka.group import GroupSource
from worker.transports.kafka.offsets import OffsetTracker, RequestSource
from worker.transports.kafka.reply_topics import Refusal, ReplyTopics

log = logging.getLogger("sessionq.worker")
LAG_REFRESH_S = 5.0  # consumer-lag gauge refresh period
MAX_REPLY_BYTES = 7 * 1024 * 1024  # under the replies topic's 8 MiB max.message.bytes
RESOLVE_ATTEMPTS = 3  # dead-letter attempts before an offset is finished unresolved
RESOLVE_BACKOFF_S = 0.5  # times the attempt number, between dead-letter attempts
STEP_TIMEOUT_S = 5.0  # one poll, commit or lag refresh of the loop, at most
DRAIN_S = 2.0  # at shutdown, in-flight calls get this long; then their offsets stay open
CLOSE_STEP_S = 0.9  # then the commit, the consumer and the producer get this long each
T = TypeVar("T")
Decoded = ToolRequest | InvalidRequestError | EnvelopeError


def _authenticator(settings: AnsweringSettings) -> CallerAuthenticator | None:
    """The keyring's verifier; without one (settings allow that only when asked for
    explicitly) every caller is taken at its word, and the log says so."""
    if settings.keyring is not None:
        return CallerAuthenticator(Keyring(settings.keyring))
    log.warning("callers are NOT authenticated (--insecure-unauthenticated-callers)")
    return None


class Worker:
    """Answers requests from the requests topic; several processes form one group."""

    def __init__(
        self,
        settings: AnsweringSettings,
        service: QueryService | None,
        *,
        client_id: str = "sessionq-worker",
        metrics: Metrics | None = None,
        source: RequestSource | None = None,
    ) -> None:
        """``service``: the replica every request is answered from (None: a subclass
        answers each partition from its own, ``pipeline_for``). ``source``: the requests
        feed; by default this worker's own group member (a partitioned node passes its
        co-partitioned member, ``worker.transports.kafka.node``)."""
        kafka = settings.kafka
        self.settings = settings
        self.kafka = kafka
        self.service = service
        self.source: RequestSource = source or GroupSource(
            kafka, kafka.requests_topic, settings.group, client_id=client_id
        )
        replies = f"{client_id}-replies"
        self.producer = Producer(
            kafka, client_id=replies, request_timeout_ms=10000, max_request_size=DLQ_MAX_BYTES
        )
        self.metrics = metrics if metrics is not None else Metrics("worker")
        self.authenticator = _authenticator(settings)
        self.slots = Slots(settings.max_in_flight, settings.in_flight_per_workspace)
        self.shares = Shares(settings.admitted_per_host, settings.admitted_per_workspace)
        self.pipeline = None if service is None else self.new_pipeline(service)
        self.offsets = OffsetTracker()
        self.reply_topics = ReplyTopics(settings, self.producer, self.metrics)
        self._joined: dict[bytes, list[tuple[int, int]]] = {}  # in flight -> its replays
        self._tasks: set[asyncio.Task[None]] = set()
        # requests admitted (running or parked waiting for their caller / a slot)
        self._admitted = asyncio.Semaphore(settings.max_admitted)
        self._stopping = asyncio.Event()
        self._started = False
        self.assigned: list[int] = []

    # ---- lifecycle ----------------------------------------------------------------------------
    async def start(self) -> None:
        await self.producer.start()
        await warn_of_unequal_partitions(self.kafka)
        await self.source.start(self._on_revoked, self._on_assigned)
        self._started = True

    def new_pipeline(self, service: QueryService, route: Route | None = None) -> Pipeline:
        """A pipeline over ``service`` sharing this worker's keyring, slots and shares."""
        return Pipeline(
            service,
            self.settings.tools,
            metrics=self.metrics,
            wait_for_caller=True,
            authenticator=self.authenticator,
            slots=self.slots,
            shares=self.shares,
            route=route,
        )

    async def _on_revoked(self, partitions: list[int]) -> None:
        await self._commit()
        self.offsets.forget(partitions)
        self.assigned = [p for p in self.assigned if p not in partitions]

    async def _on_assigned(self, partitions: list[int]) -> None:
        self.assigned = sorted(set(self.assigned) | set(partitions))
        log.info("assigned partitions %s", self.assigned, extra={"partitions": self.assigned})

    async def ready(self) -> bool:
        """Ready once the member joined its group (it may still own no partition)."""
        return self._started and not self._stopping.is_set()

    def readiness_notes(self) -> dict[str, str]:
        """What ``/readyz`` says besides ready or not."""
        if self.authenticator is None:
            return {"warning": "callers are not authenticated"}
        return {}

    async def stop(self) -> None:
        self._stopping.set()

    async def close(self) -> None:
        """Within ~5 s even with the broker gone: in-flight calls get ``DRAIN_S`` (the
        rest are cancelled, their offsets uncommitted: another member answers them),
        then the commit, the consumer and the producer ``CLOSE_STEP_S`` each."""
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=DRAIN_S)
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
        for step in (self._commit, self.source.stop, self.producer.stop):
            try:
                await asyncio.wait_for(step(), CLOSE_STEP_S)
            except asyncio.CancelledError:  # aiokafka re-raises its own tasks' cancellation
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise
            except Exception as exc:
                log.debug("closing: %s", _describe(exc))

    async def run(self, *, timeout: float | None = None) -> None:
        """Serve until stopped (or ``timeout`` seconds, for tests). Every step of the
        loop is bounded and ends when a stop is asked for (``_step``)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        last_commit = time.monotonic()
        last_lag = time.monotonic()
        while not self._stopping.is_set():
            if deadline is not None and time.monotonic() >= deadline:
                break
            records = await self._step(self.source.poll(timeout_ms=100, max_records=100))
            await self._take(records or [])
            if time.monotonic() - last_commit >= 0.2:
                await self._step(self._commit())
                last_commit = time.monotonic()
            if time.monotonic() - last_lag >= LAG_REFRESH_S:
                await self._step(self._refresh_lag())
                last_lag = time.monotonic()

    async def _step(self, step: Awaitable[T]) -> T | None:
        """``step``'s result, or None once it took ``STEP_TIMEOUT_S`` or a stop was asked
        for first (then it is cancelled): with the broker gone aiokafka's commit waits
        for a coordinator forever, and the loop must still notice SIGTERM."""
        task = asyncio.ensure_future(step)
        stop = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait(
                {task, stop}, timeout=STEP_TIMEOUT_S, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            stop.cancel()
        if task.done():
            return task.result()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        return None

    async def _take(self, records: list[InRecord]) -> None:
        """One polled batch: decode, probe its unknown reply topics once, then give
        every record its one outcome (module docstring)."""
        batch = []
        for record in records:
            self.offsets.started(record.partition, record.offset)
            batch.append((record, self._decode(record)))
        await self.reply_topics.probe(
            d.reply_to for _, d in batch if isinstance(d, (ToolRequest, InvalidRequestError))
        )
        for record, decoded in batch:
            if isinstance(decoded, CancelRequest):
                # cancels never wait for a slot: they must reach the calls holding them
                pipeline = self.pipeline_for(record.partition)
                ref = decoded.caller
                if pipeline is not None:
                    pipeline.cancel(
                        decoded.id,
                        decoded.reason,
                        session_id=ref.session_id if ref is not None else None,
                        token=ref.token if ref is not None else None,
                        binding=Binding(decoded),
                    )
                self.offsets.finished(record.partition, record.offset)
                continue
            refusal = (
                self.reply_topics.refusal(decoded.reply_to)
                if isinstance(decoded, (ToolRequest, InvalidRequestError))
                else None
            )
            same = hashlib.sha256(record.value or b"").digest()
            if refusal is None and isinstance(decoded, ToolRequest) and same in self._joined:
                self._joined[same].append((record.partition, record.offset))
                continue
            await self._admitted.acquire()
            self._joined.setdefault(same, [])
            task = asyncio.create_task(self._guarded(record, decoded, refusal, same))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _refresh_lag(self) -> None:
        try:
            lags = await self.source.lag()
        except Exception as exc:  # metadata during a rebalance; the next refresh retries
            log.debug("lag refresh failed: %s", exc)
            return
        for partition, lag in lags.items():
            self.metrics.consumer_lag.labels(self.kafka.requests_topic, str(partition)).set(lag)

    async def _commit(self) -> None:
        offsets = self.offsets.committable()
        if offsets:
            try:
                await self.source.commit(offsets)
            except Exception as exc:  # a rebalance in progress; the next commit retries
                log.warning("request offset commit failed: %s", exc)

    # ---- one record ---------------------------------------------------------------------------
    @staticmethod
    def _decode(record: InRecord) -> RequestRecord | InvalidRequestError | EnvelopeError:
        try:
            return decode_request(record.value)
        except (InvalidRequestError, EnvelopeError) as exc:
            return exc

    async def _guarded(
        self, record: InRecord, decoded: Decoded, refusal: Refusal | None, same: bytes
    ) -> None:
        """Every request offset is resolved, whatever the producer raises: a reply; else
        a small error reply (the answer itself failed); else a dead letter. A dead letter
        the broker will not take either is retried ``RESOLVE_ATTEMPTS`` times; then the
        offset is finished anyway, logged and counted (``sessionq_requests_unresolved``):
        one unanswerable record must not pin its partition's committed offset forever.
        The replays that joined it are finished with it."""
        try:
            await self._resolve(record, decoded, refusal)
        except Exception:  # a bug in resolving itself: still never pin the partition
            log.exception(
                "request %s[%d]@%d is unresolved", record.topic, record.partition, record.offset
            )
            self.metrics.requests_unresolved.inc()
        finally:
            self._admitted.release()
        self.offsets.finished(record.partition, record.offset)
        for partition, offset in self._joined.pop(same, ()):
            self.offsets.finished(partition, offset)

    async def _resolve(self, record: InRecord, decoded: Decoded, refusal: Refusal | None) -> None:
        where = f"{record.topic}[{record.partition}]@{record.offset}"
        try:
            await self.handle(record, decoded, refusal)
            return
        except UndeliverableError as exc:
            reason, code = f"reply undeliverable: {exc}", exc.code
            if isinstance(exc, TopicMissingError) and exc.topic != self.kafka.dlq_topic:
                self.reply_topics.doubt(exc.topic)
        except Exception as exc:
            log.exception("request %s was not answered", where)
            reason, code = f"reply failed: {_describe(exc)}", REPLY_FAILED
            if isinstance(decoded, (InvalidRequestError, ToolRequest)) and refusal is None:
                rid = decoded.request_id if isinstance(decoded, InvalidRequestError) else decoded.id
                try:  # the answer failed, not necessarily its topic: a small error reply
                    await self._reply(
                        decoded.reply_to, error_reply(rid, TOOL_FAILED, TOOL_FAILED_MESSAGE)
                    )
                    return
                except Exception as again:
                    log.warning("request %s: error reply failed too: %s", where, _describe(again))
        for attempt in range(1, RESOLVE_ATTEMPTS + 1):
            try:
                await self._dead_letter(record, reason, code)
                return
            except Exception as exc:
                log.warning(
                    "request %s: dead letter failed (attempt %d of %d): %s",
                    where,
                    attempt,
                    RESOLVE_ATTEMPTS,
                    _describe(exc),
                )
                if attempt < RESOLVE_ATTEMPTS:
                    await asyncio.sleep(RESOLVE_BACKOFF_S * attempt)
        self.metrics.requests_unresolved.inc()
        unresolved = "request %s is unresolved (no reply, no dead letter: %s); offset committed"
        log.error(unresolved, where, reason, extra={"request": where, "code": code})

    async def handle(self, record: InRecord, decoded: Decoded, refusal: Refusal | None) -> None:
        """One decoded record to its one outcome (cancels never get here: ``_take``
        applies them at once); ``refusal`` is its reply-topic decision."""
        if refusal is not None:  # decided before any work: nothing goes to that topic
            await self._dead_letter(record, refusal.reason, refusal.code)
            return
        if isinstance(decoded, InvalidRequestError):
            reply = error_reply(decoded.request_id, decoded.code, decoded.reason)
            await self._reply(decoded.reply_to, reply)
        elif isinstance(decoded, EnvelopeError):
            await self._dead_letter(record, decoded.message, decoded.code)
        else:
            await self._reply(decoded.reply_to, await self.answer(record, decoded))

    def pipeline_for(self, partition: int) -> Pipeline | None:
        """The pipeline that answers requests of ``partition`` (None: none here now)."""
        return self.pipeline

    async def answer(self, record: InRecord, request: ToolRequest) -> Reply:
        """The one reply to a tool request, through the pipeline of its partition."""
        key = record.key.decode("utf-8", "replace") if record.key is not None else None
        call = ToolCall.from_request(request, sent_ms=record.timestamp_ms, workspace_key=key)
        pipeline = self.pipeline_for(record.partition)
        assert pipeline is not None, "a worker of a full replica answers every partition"
        return reply_for(request.id, await pipeline.answer(call))

    async def _dead_letter(self, record: InRecord, reason: str, code: str) -> None:
        self.metrics.dlq_records.labels("requests").inc()
        await self.producer.send(
            self.kafka.dlq_topic, dead_letter(record, reason, code), key=record.key
        )

    async def _reply(self, topic: str, reply: Reply) -> None:
        """Produce the reply; one too large for the topic becomes a small error reply."""
        headers = [("correlation_id", reply.id.encode())]
        value = reply.encode()
        if len(value) > MAX_REPLY_BYTES:
            log.warning(
                "reply %s is %d bytes; answering with an error instead", reply.id, len(value)
            )
            value = error_reply(reply.id, TOOL_FAILED, TOOL_FAILED_MESSAGE).encode()
        await self.producer.send(topic, value, key=reply.id.encode(), headers=headers)


def _describe(exc: BaseException) -> str:
    """One line naming an exception (aiokafka errors often have an empty message)."""
    try:
        lines = str(exc).splitlines()
    except Exception:  # some aiokafka errors' __str__ raises when built unusually
        lines = []
    text = lines[0] if lines else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
