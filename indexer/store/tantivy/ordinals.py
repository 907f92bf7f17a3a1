"""Session ordinals: the small integer each of a session's documents carries (the ``sid``
fast field a search groups by), allocated by the writer.

An ordinal is never reused within a process, and across processes only once no live
document carries it: a writer starts after the largest one its index holds, and gives a
session already in the index the ordinal its committed documents carry.
"""

from __future__ import annotations

from collections.abc import Callable

import tantivy

from indexer.store.tantivy.queries import term
from indexer.store.tantivy.schema import raw_term

__all__ = ["Ordinals"]


class Ordinals:
    """The writer's ordinals (module docstring)."""

    def __init__(
        self, searcher: Callable[[], tantivy.Searcher | None], schema: tantivy.Schema
    ) -> None:
        self._searcher = searcher
        self._schema = schema
        self._known: dict[str, int] = {}
        self._next = 1

    def start_after_the_largest(self) -> None:
        """Allocate after the largest ordinal the index holds."""
        searcher = self._searcher()
        if searcher is None or searcher.num_docs == 0:
            return
        hits = searcher.search(
            tantivy.Query.all_query(), limit=1, count=False, order_by_field="sid"
        ).hits
        self._next = (int(hits[0][0]) if hits else 0) + 1

    def given(self, session_id: str) -> int:
        """The ordinal this writer gave the session, else a new one (its documents are
        all replaced: none of the old ones survives the session's delete)."""
        known = self._known.get(session_id)
        return known if known is not None else self._new(session_id)

    def of(self, session_id: str) -> int:
        """The ordinal the session's committed documents carry, else a fresh one."""
        known = self._known.get(session_id)
        if known is not None:
            return known
        ordinal: int | None = None
        searcher = self._searcher()
        if searcher is not None:
            query = term(self._schema, "session", raw_term(session_id))
            hits = searcher.search(query, limit=1, count=False).hits
            if hits:
                value = searcher.fast_field_values("sid", [hits[0][1]])[0]
                ordinal = value if isinstance(value, int) else None
        if ordinal is None:
            return self._new(session_id)
        self._known[session_id] = ordinal
        return ordinal

    def _new(self, session_id: str) -> int:
        ordinal = self._known[session_id] = self._next
        self._next += 1
        return ordinal
