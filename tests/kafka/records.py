"""Raw records for the Kafka tests: exact bytes in (a producer with timestamps and
partitions), every reply out (a tap on a reply topic), and the envelopes hosts write."""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.structs import RecordMetadata

from tests.fixtures.waiting import wait_until
from worker.contract.envelopes import Reply, decode_reply


class RawProducer:
    """Produce exact bytes (optionally with a timestamp or a partition); acks=all."""

    def __init__(self, bootstrap: str, *, max_request_size: int = 1048576) -> None:
        self._producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap, acks="all", max_request_size=max_request_size
        )

    async def __aenter__(self) -> RawProducer:
        await self._producer.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._producer.stop()

    async def send(
        self,
        topic: str,
        value: bytes | None,
        *,
        key: str | bytes | None = None,
        timestamp_ms: int | None = None,
        partition: int | None = None,
    ) -> RecordMetadata:
        raw_key = key.encode() if isinstance(key, str) else key
        return await self._producer.send_and_wait(
            topic, value, key=raw_key, timestamp_ms=timestamp_ms, partition=partition
        )

    async def send_json(self, topic: str, value: Any, **kwargs: Any) -> RecordMetadata:
        return await self.send(topic, orjson.dumps(value), **kwargs)


class ReplyTap:
    """Reads a reply topic from its beginning and keeps every reply (duplicates included)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.replies: list[Reply] = []
        self.unreadable: list[bytes | None] = []
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
        )
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> ReplyTap:
        await self._consumer.start()
        parts = self._consumer.partitions_for_topic(self.topic)
        if not parts:
            await self._consumer._client.force_metadata_update()
            parts = self._consumer.partitions_for_topic(self.topic) or set()
        tps = [TopicPartition(self.topic, p) for p in sorted(parts)]
        self._consumer.assign(tps)
        await self._consumer.seek_to_beginning(*tps)
        self._task = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._consumer.stop()

    async def _read(self) -> None:
        while True:
            for records in (await self._consumer.getmany(timeout_ms=200)).values():
                for record in records:
                    try:
                        self.replies.append(decode_reply(record.value))
                    except ValueError:
                        self.unreadable.append(record.value)

    def by_id(self) -> dict[str, list[Reply]]:
        out: dict[str, list[Reply]] = {}
        for reply in self.replies:
            out.setdefault(reply.id, []).append(reply)
        return out

    async def wait_for(self, ids: Iterable[str], *, timeout: float) -> dict[str, Reply]:
        """The first reply of each id, once every id has one."""
        wanted = set(ids)
        await wait_until(
            lambda: wanted <= set(self.by_id()),
            timeout=timeout,
            what=f"replies to {len(wanted)} requests on {self.topic}",
        )
        first = self.by_id()
        return {i: first[i][0] for i in wanted}


def request_record(
    request_id: str,
    reply_to: str,
    tool: str,
    arguments: Any,
    *,
    session_id: str | None = None,
    step_seq: int | None = None,
    min_seq: int | None = None,
    timeout_ms: int | None = None,
) -> dict[str, Any]:
    """A request envelope exactly as a host writes it (DESIGN.md)."""
    record: dict[str, Any] = {
        "v": 1,
        "kind": "request",
        "id": request_id,
        "reply_to": reply_to,
        "tool": tool,
        "arguments": arguments,
    }
    if session_id is not None:
        caller: dict[str, Any] = {"session_id": session_id}
        if step_seq is not None:
            caller["step_seq"] = step_seq
        if min_seq is not None:
            caller["min_seq"] = min_seq
        record["caller"] = caller
    if timeout_ms is not None:
        record["timeout_ms"] = timeout_ms
    return record


def header_record(header: Mapping[str, Any]) -> dict[str, Any]:
    return {"v": 1, "kind": "header", "header": dict(header)}


def events_record(session_id: str, events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {"v": 1, "kind": "events", "session_id": session_id, "events": [dict(e) for e in events]}


def routing_key(header: Mapping[str, Any]) -> str:
    cwd = header.get("cwd")
    return cwd if isinstance(cwd, str) else f"session:{header['id']}"


# ---- dead letters ----


def dead_letters(records: Sequence[Any]) -> list[dict[str, Any]]:
    return [orjson.loads(r.value) for r in records]


def by_source_offset(letters: Sequence[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = {}
    for letter in letters:
        out.setdefault(letter["source"]["offset"], []).append(letter)
    return out


def assert_dead_letter(
    letter: dict[str, Any],
    meta: RecordMetadata,
    *,
    topic: str,
    key: bytes | None,
    value: bytes | None,
    code: str,
    reason: str,
) -> None:
    """A dead letter names its reason and source, and carries the original bytes."""
    assert letter["v"] == 1
    assert letter["code"] == code, letter
    assert letter["reason"].startswith(reason), letter["reason"]
    assert letter["source"] == {
        "topic": topic,
        "partition": meta.partition,
        "offset": meta.offset,
        "timestamp": meta.timestamp,
    }
    assert letter["key_b64"] == (None if key is None else base64.b64encode(key).decode())
    assert letter["value_b64"] == (None if value is None else base64.b64encode(value).decode())
