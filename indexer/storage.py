"""A data directory: the SQLite tables, the Tantivy index, the writer and the commit
protocol behind one handle. One writer process per data directory; readers open
``indexer.query.service.StoreQueryService`` on the same directory.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from indexer.apply import Applied, StoreWriter
from indexer.checkpoint import Checkpoint
from indexer.model.records import EventStreamRecord
from indexer.store.sqlite_tables import SqliteTables
from indexer.store.tantivy_index import TantivyIndex


def sqlite_path(data_dir: Path) -> Path:
    return data_dir / "store.sqlite3"


def index_path(data_dir: Path) -> Path:
    return data_dir / "tantivy"


class Store:
    """The writer side of a data directory."""

    def __init__(self, data_dir: Path, *, heap_bytes: int = 128_000_000, threads: int = 1) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self.data_dir = data_dir
        self.tables = SqliteTables(sqlite_path(data_dir))
        self.index = TantivyIndex(
            index_path(data_dir), writable=True, heap_bytes=heap_bytes, threads=threads
        )
        self.writer = StoreWriter(self.tables, self.index)
        self.checkpoint = Checkpoint(self.tables, self.index)

    def apply(self, record: EventStreamRecord) -> Applied:
        return self.writer.apply(record)

    def commit(self, offsets: Mapping[tuple[str, int], int] | None = None) -> None:
        self.checkpoint.commit(offsets)

    def abort(self) -> None:
        self.checkpoint.abort()

    def offsets(self) -> dict[tuple[str, int], int]:
        return self.tables.offsets()

    def close(self) -> None:
        self.checkpoint.abort()
        self.tables.close()
        self.index.close()
