"""What ``sessionq publish`` sends of a run whose record cannot be encoded: nothing of
that log's piece — never a header without its events — and every other log whole."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from indexer.logs.emitted import Emitted
from indexer.model.records import DeleteRecord, EventsRecord, HeaderRecord, decode_record
from tests.builders import header, plain
from worker.host.publisher import Publisher


class Recorder:
    """A producer that takes every record at once (``Producer.enqueue``'s shape)."""

    def __init__(self) -> None:
        self.sent: list[tuple[bytes | None, bytes | None]] = []

    async def enqueue(self, topic: str, value: bytes | None, *, key: bytes | None = None,
                      headers: Any = ()) -> asyncio.Future[None]:
        self.sent.append((key, value))
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return done


def log_records(sid: str, cwd: str, *events: dict[str, Any]) -> list[Emitted]:
    """A log's records as the watcher emits them: its header, then its events."""
    path = Path(f"/logs/{sid}.jsonl")
    out = [Emitted(cwd, HeaderRecord(v=1, kind="header", header=header(sid, cwd=cwd)), 0, path)]
    out += [Emitted(cwd, EventsRecord(v=1, kind="events", session_id=sid, events=[e]), 1, path)
            for e in events]
    out[-1].final = True
    return out


async def test_a_log_that_cannot_be_encoded_costs_only_itself() -> None:
    turn = plain(0, "turn/start", {"turn": 1})
    unencodable = plain(0, "turn/start", {"turn": {1, 2}})  # no JSON value
    items = [
        *log_records("bad-events", "/w", unencodable, plain(1, "step/start")),
        *log_records("bad-key", "/w/\ud83d", turn),  # a routing key that is no Kafka key
        *log_records("split", "/w", {**turn, "data": {"text": "# Project \ud83d"}}),
        *log_records("header-only", "/w"),
        Emitted("/w", DeleteRecord(v=1, kind="delete", session_id="gone")),
    ]
    producer = Recorder()
    publisher = Publisher(producer, "sessionq.events")  # type: ignore[arg-type]

    await publisher._publish(items)

    sent = [decode_record(value) for _, value in producer.sent]
    assert [(r.kind, r.header["id"] if isinstance(r, HeaderRecord) else r.session_id)
            for r in sent] == [("header", "split"), ("events", "split"),
                               ("header", "header-only"), ("delete", "gone")]
    assert isinstance(sent[1], EventsRecord) and sent[1].events[0]["data"]["text"] == (
        "# Project \ud83d"
    )
    assert sorted(publisher.rejected) == ["/logs/bad-events.jsonl", "/logs/bad-key.jsonl"]
    assert "holds a lone surrogate (no Kafka key)" in publisher.rejected["/logs/bad-key.jsonl"]
    assert (publisher.summary.sessions, publisher.summary.records) == (2, 4)
