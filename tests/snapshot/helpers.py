"""Stores for the snapshot tests, written through the product's record path, and a view
of what a data dir holds that does not depend on the table layout of the events."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from indexer.model.records import EventsRecord, HeaderRecord
from indexer.store.layout import index_path, sqlite_path
from indexer.store.records.store import Store
from indexer.store.tables.connection import connect
from indexer.store.tantivy import TantivyIndex
from tests.builders import header, user
from tests.indexer.tantivy_helpers import dump_docs

TOPIC = "sessionq.events"


def add_sessions(store: Store, first: int, count: int, *, commit: bool = True) -> None:
    """Sessions ``s<first>`` .. ``s<first+count-1>``, one indexed message each; the
    stored offset of partition 0 is the number of sessions, so a view can tell whether
    the rows, the index and the offsets belong to the same batch."""
    for n in range(first, first + count):
        sid = f"s{n:05d}"
        store.apply(HeaderRecord(v=1, kind="header", header=header(sid, cwd="/snap/ws")))
        store.apply(
            EventsRecord(
                v=1,
                kind="events",
                session_id=sid,
                events=[user(0, f"snapshot probe {sid} kestrel")],
            )
        )
    if commit:
        store.commit({(TOPIC, 0): first + count})


def build(data: Path, sessions: int) -> None:
    store = Store(data)
    try:
        add_sessions(store, 0, sessions)
    finally:
        store.close()


@dataclass(frozen=True)
class View:
    sessions: frozenset[str]
    documents: frozenset[str]  # session ids of the index documents
    offsets: dict[tuple[str, int], int]
    meta: dict[str, str]


def view(data: Path) -> View:
    conn = connect(sqlite_path(data), readonly=True)
    try:
        sessions = frozenset(r[0] for r in conn.execute("SELECT id FROM sessions"))
        offsets = {
            (str(t), int(p)): int(o)
            for t, p, o in conn.execute("SELECT topic, partition, next_offset FROM offsets")
        }
        meta = {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM meta")}
    finally:
        conn.close()
    index = TantivyIndex(index_path(data), writable=False)
    try:
        documents = frozenset(d.session_id for d in dump_docs(index))
    finally:
        index.close()
    return View(sessions, documents, offsets, meta)
