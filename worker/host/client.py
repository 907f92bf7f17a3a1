"""The host-side client: call a tool over Kafka and await its one reply.

A host embeds one ``SessionqClient``: it owns a producer for the requests topic and a
reader of its reply topic, correlates replies by request id (duplicates — at-least-once
delivery — are dropped), sends a cancel record when the awaiting task is cancelled, and
gives up cleanly with a ``TOOL_TIMEOUT`` reply when no reply arrives in time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from typing import Any

from indexer.errors import ErrorCode
from indexer.kafka.client import Producer
from indexer.model.event import dump_json
from indexer.settings import KafkaSettings
from worker.authn.tokens import CallerSigner
from worker.contract.envelopes import MAX_REQUEST_BYTES, Reply, decode_reply, error_reply
from worker.contract.errors import CALLER_UNAUTHENTICATED, INVALID_ARGS
from worker.host.kafka_io import ReplyReader
from worker.host.preflight import caller_warnings, refusal_hint

log = logging.getLogger("sessionq.client")
TIMEOUT_GRACE_S = 2.0


class SessionqClient:
    """Request/reply over Kafka for one host process."""

    def __init__(
        self,
        kafka: KafkaSettings,
        *,
        requests_topic: str | None = None,
        reply_topic: str | None = None,
        client_id: str | None = None,
        signer: CallerSigner | None = None,
    ) -> None:
        """Topics default to ``kafka``'s requests and replies topics. ``signer`` (the
        host's key) adds a caller token to every request; workers with a keyring
        answer no request without one."""
        self.signer = signer
        cid = client_id or f"sessionq-host-{uuid.uuid4().hex[:8]}"
        self.requests_topic = requests_topic or kafka.requests_topic
        self.reply_topic = reply_topic or kafka.replies_topic
        self._producer = Producer(kafka, client_id=cid)
        self._reader = ReplyReader(kafka, self.reply_topic, client_id=f"{cid}-replies")
        self._pending: dict[str, asyncio.Future[Reply]] = {}
        self._task: asyncio.Task[None] | None = None
        self._warned: set[str] = set()

    async def __aenter__(self) -> SessionqClient:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        try:
            await self._producer.start()
            await self._reader.start()
        except BaseException:
            with contextlib.suppress(Exception):
                await self._reader.stop()
            with contextlib.suppress(Exception):
                await self._producer.stop()
            raise
        self._task = asyncio.create_task(self._read_replies(), name="sessionq-replies")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        try:  # both clients are closed even when one fails to stop (no "Unclosed" warning)
            await self._reader.stop()
        finally:
            await self._producer.stop()

    async def _read_replies(self) -> None:
        while True:
            for record in await self._reader.poll(200):
                if record.value is None:
                    continue
                try:
                    reply = decode_reply(record.value)
                except ValueError:
                    log.warning(
                        "ignoring an unreadable reply at %s[%d]@%d",
                        record.topic,
                        record.partition,
                        record.offset,
                    )
                    continue
                fut = self._pending.get(reply.id)
                if fut is not None and not fut.done():
                    fut.set_result(reply)

    async def call(
        self,
        tool: str,
        arguments: Any,
        *,
        session_id: str,
        step_seq: int | None = None,
        min_seq: int | None = None,
        timeout_ms: int | None = None,
        routing_key: str | None = None,
        request_id: str | None = None,
        workspace: str | None = None,
    ) -> Reply:
        """Send one request and await its reply.

        ``workspace`` is the caller's cwd (None: it has none); a signing client vouches
        for it in the caller token, and the worker checks it against the caller's stored
        header. ``routing_key`` (default: the workspace, or ``session:<id>``) only
        chooses the partition. Cancelling the awaiting task publishes a cancel record.
        Any string of ``arguments`` goes as JavaScript would send it: a lone surrogate
        is written as its escape (``dump_json``) and signed as JavaScript's JCS writes
        it (``worker.authn.binding``), so the worker's digest is the host's.
        """
        rid = request_id or str(uuid.uuid4())
        caller: dict[str, Any] = {"session_id": session_id}
        if routing_key is None and workspace is not None:
            routing_key = workspace
        if step_seq is not None:
            caller["step_seq"] = step_seq
        if min_seq is not None:
            caller["min_seq"] = min_seq
        request: dict[str, Any] = {
            "v": 1,
            "kind": "request",
            "id": rid,
            "reply_to": self.reply_topic,
            "tool": tool,
            "arguments": arguments,
            "caller": caller,
        }
        if timeout_ms is not None:
            request["timeout_ms"] = timeout_ms
        try:  # the token binds the whole request, so it is signed last
            value = dump_json(self._signed(request, workspace))
        except (TypeError, ValueError) as exc:  # not JSON, or nothing a token can bind
            return error_reply(rid, INVALID_ARGS, f"invalid arguments: {exc}")
        if len(value) > MAX_REQUEST_BYTES:  # the worker and the topic would refuse it
            return error_reply(
                rid,
                INVALID_ARGS,
                f"invalid arguments: the request is {len(value)} bytes;"
                f" the maximum is {MAX_REQUEST_BYTES}",
            )
        self._warn(caller_warnings(self.signer, workspace))
        fut: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        key = (routing_key or f"session:{session_id}").encode()
        try:
            await self._producer.send(self.requests_topic, value, key=key)
            wait = None if timeout_ms is None else timeout_ms / 1000 + TIMEOUT_GRACE_S
            reply = await asyncio.wait_for(asyncio.shield(fut), wait)
            if reply.error is not None and reply.error.code == CALLER_UNAUTHENTICATED:
                hint = refusal_hint(self.signer, workspace)
                self._warn([f"a caller was refused; likely cause: {hint}"])
            return reply
        except TimeoutError:
            await self.cancel(
                rid,
                {"code": ErrorCode.TOOL_TIMEOUT, "message": "host stopped waiting"},
                routing_key=key,
                session_id=session_id,
                workspace=workspace,
            )
            timed_out = f"tool call timed out after {timeout_ms}ms"
            return error_reply(rid, ErrorCode.TOOL_TIMEOUT, timed_out)
        except asyncio.CancelledError:
            await asyncio.shield(
                self.cancel(
                    rid,
                    {"code": ErrorCode.ABORTED, "message": "session query was cancelled"},
                    routing_key=key,
                    session_id=session_id,
                    workspace=workspace,
                )
            )
            raise
        finally:
            self._pending.pop(rid, None)

    async def cancel(
        self,
        request_id: str,
        reason: Any,
        *,
        routing_key: bytes,
        session_id: str | None = None,
        workspace: str | None = None,
    ) -> None:
        """Publish a cancel record; it carries the request's key so it lands in the same
        partition, i.e. at the worker that owns the request. A signing client signs it
        for the request's caller: workers that authenticate honour only such cancels."""
        record: dict[str, Any] = {"v": 1, "kind": "cancel", "id": request_id, "reason": reason}
        if session_id is not None:
            record["caller"] = {"session_id": session_id}
            record = self._signed(record, workspace)
        await self._producer.send(self.requests_topic, dump_json(record), key=routing_key)

    def _warn(self, warnings: list[str]) -> None:
        """Each distinct warning once per client (``worker.host.preflight``)."""
        for warning in warnings:
            if warning not in self._warned:
                self._warned.add(warning)
                log.warning("%s", warning)

    def _signed(self, envelope: dict[str, Any], workspace: str | None) -> dict[str, Any]:
        """The envelope with its caller token (a signing client), bound to every other
        member: nothing may change after this."""
        if self.signer is None:
            return envelope
        token = self.signer.sign(envelope, workspace)
        return {**envelope, "caller": {**envelope["caller"], "token": token}}


async def call_once(
    kafka: KafkaSettings,
    tool: str,
    arguments: Any,
    *,
    session_id: str,
    step_seq: int | None = None,
    timeout_ms: int,
    request_id: str | None = None,
    signer: CallerSigner | None = None,
    workspace: str | None = None,
) -> Reply:
    """One call with a short-lived client (the CLI's ``--bootstrap`` mode)."""
    async with SessionqClient(kafka, signer=signer) as client:
        return await client.call(
            tool,
            arguments,
            session_id=session_id,
            step_seq=step_seq,
            timeout_ms=timeout_ms,
            request_id=request_id,
            workspace=workspace,
        )
