"""The dead-letter record both roles write to ``sessionq.dlq``: why, where from, and the
original bytes (``docs/schemas/dead-letter.schema.json``)."""

from __future__ import annotations

import base64

import orjson

from indexer.kafka.client import InRecord

DLQ_MAX_BYTES = 16 * 1024 * 1024  # the DLQ topic's max.message.bytes
DLQ_MAX_ORIGINAL_BYTES = 9 * 1024 * 1024  # any record the 8 MiB topics accept


def dead_letter(record: InRecord, reason: str, code: str) -> bytes:
    """The DLQ value: why, where it came from, and the original bytes (cut, with
    ``value_truncated`` set, only beyond what sessionq's topics accept at all)."""
    value = record.value
    truncated = value is not None and len(value) > DLQ_MAX_ORIGINAL_BYTES
    if value is not None and truncated:
        value = value[:DLQ_MAX_ORIGINAL_BYTES]
    return orjson.dumps(
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
