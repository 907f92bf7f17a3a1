"""Which sessions live in which segments of an index snapshot (the purge's question:
``indexer.store.maintenance``)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import tantivy

from indexer.store.tantivy.schema import load_meta

__all__ = ["segment_sessions"]


def segment_sessions(
    searcher: tantivy.Searcher | None, ordinals: Collection[int]
) -> tuple[list[int], set[str]]:
    """Live documents per segment of the snapshot (in segment order, the order of
    ``meta.json``), and the sessions with a live document in the segments at
    ``ordinals``. Reads every document's ``sid`` column and one stored document per
    session found."""
    if searcher is None:
        return [], set()
    counts = [0] * int(searcher.num_segments)
    if searcher.num_docs == 0:
        return counts, set()
    hits = searcher.search(
        tantivy.Query.all_query(), limit=int(searcher.num_docs), count=False
    ).hits
    wanted = set(ordinals)
    one_per_sid: dict[int, Any] = {}
    addrs = [addr for _, addr in hits]
    for addr in addrs:
        counts[addr.segment_ord] += 1
    chosen = [addr for addr in addrs if addr.segment_ord in wanted]
    for addr, sid in zip(chosen, searcher.fast_field_values("sid", chosen), strict=True):
        one_per_sid.setdefault(int(sid or 0), addr)
    sessions = {str(load_meta(searcher.doc(addr))[0]) for addr in one_per_sid.values()}
    return counts, sessions
