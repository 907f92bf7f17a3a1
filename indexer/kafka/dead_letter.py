"""The dead-letter record both roles write to ``sessionq.dlq``: why, where from, and the
original bytes (``docs/schemas/dead-letter.schema.json``); and the dead letters of an
events consumer's open batch (``DeadLetters``: the Kafka indexer, a node's partition).

An events consumer never commits past a refused record without its dead letter: the
letters of a batch are sent, and acknowledged, before the batch's offsets are stored. A
letter the broker refuses (a DLQ topic whose ``max.message.bytes`` is smaller than
sessionq's) goes again without the original value, so the reason and the coordinates
are kept and the partition never stops on it.
"""

from __future__ import annotations

import asyncio
import base64
import logging

from indexer.kafka.client import InRecord, Producer
from indexer.metrics import Metrics
from indexer.model.event import dump_json

log = logging.getLogger("sessionq.dlq")

DLQ_MAX_BYTES = 16 * 1024 * 1024  # the DLQ topic's max.message.bytes
DLQ_MAX_ORIGINAL_BYTES = 9 * 1024 * 1024  # any record the 8 MiB topics accept


def dead_letter(record: InRecord, reason: str, code: str, *, with_value: bool = True) -> bytes:
    """The DLQ value: why, where it came from, and the original bytes (cut, with
    ``value_truncated`` set, only beyond what sessionq's topics accept at all; left out,
    the size still given, ``with_value=False``). A reason naming a string of the record
    (a session id holding a lone surrogate) writes it as ``dump_json`` does."""
    value = record.value if with_value else None
    truncated = value is not None and len(value) > DLQ_MAX_ORIGINAL_BYTES
    if value is not None and truncated:
        value = value[:DLQ_MAX_ORIGINAL_BYTES]
    return dump_json(
        {
            "v": 1,
            "reason": reason,
            "code": code,
            "source": {
                "topic": record.topic,
                "partition": record.partition,
                "offset": record.offset,
                "timestamp": record.timestamp_ms,
            },
            "key_b64": None if record.key is None else base64.b64encode(record.key).decode(),
            "value_b64": None if value is None else base64.b64encode(value).decode(),
            "value_truncated": truncated,
            "value_size": None if record.value is None else len(record.value),
        }
    )


class DeadLetters:
    """The dead letters of one open batch (module docstring)."""

    def __init__(self, producer: Producer, topic: str, metrics: Metrics) -> None:
        self.producer = producer
        self.topic = topic
        self.metrics = metrics
        self.sent = 0  # dead letters acknowledged, over the consumer's life
        self._pending: list[tuple[InRecord, str, str]] = []

    def __len__(self) -> int:
        return len(self._pending)

    def add(self, record: InRecord, reason: str, code: str) -> None:
        log.warning(
            "dead-lettering %s[%d]@%d: %s", record.topic, record.partition, record.offset, reason
        )
        self.metrics.dlq_records.labels("events").inc()
        self._pending.append((record, reason, code))

    def clear(self) -> None:
        """Forget the open batch's letters (it was lost: its records come again)."""
        self._pending.clear()

    async def send(self) -> None:
        """Send every pending letter and wait for the acknowledgements (pipelined); they
        stay pending until all are acknowledged (a send that raises leaves them to the
        batch's replay)."""
        if not self._pending:
            return
        pending = self._pending
        futures = [
            await self.producer.enqueue(self.topic, dead_letter(r, reason, code), key=r.key)
            for r, reason, code in pending
        ]
        results = await asyncio.gather(*futures, return_exceptions=True)
        for (r, reason, code), result in zip(pending, results, strict=True):
            if isinstance(result, BaseException):
                log.error(
                    "dead letter of %s[%d]@%d refused (%s); sending it without the original value",
                    r.topic,
                    r.partition,
                    r.offset,
                    result,
                )
                bare = dead_letter(r, reason, code, with_value=False)
                await self.producer.send(self.topic, bare, key=r.key)
        self.sent += len(pending)
        self._pending = []
