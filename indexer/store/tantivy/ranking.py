"""Ranking over one searcher snapshot (SPEC deliberate difference 2).

A session's best document maximizes (BM25 score, time, seq); sessions order by that
document's score desc, time desc, session id ascending (code points). Within one
session, documents order by score desc, time desc, seq desc. Both rankings fetch the
top documents by score in growing rounds and stop as soon as the first places can no
longer change; rank fields come from fast-field columns, stored documents are read
only to break (score, time) ties between sessions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Final, cast

import tantivy

from indexer.store.tantivy.queries import Clause
from indexer.store.tantivy.schema import load_meta

MIN_FETCH: Final = 64
GROWTH: Final = 4


@dataclass(slots=True)
class Cand:
    """A matching document with the fast-field values its rank depends on."""

    score: float
    time: int
    seq: int
    sid: int
    addr: Any  # tantivy.DocAddress


def rank_in_session(c: Cand) -> tuple[float, int, int]:
    """Larger is better: score desc, time desc, seq desc (deliberate difference 2)."""
    return (c.score, c.time, c.seq)


@dataclass(slots=True)
class Batch:
    """One fetch of top documents as parallel columns (no object per document)."""

    scores: list[float]
    times: list[int]
    seqs: list[int]
    sids: list[int]
    addrs: list[Any]
    exhaustive: bool

    def cand(self, i: int) -> Cand:
        return Cand(self.scores[i], self.times[i], self.seqs[i], self.sids[i], self.addrs[i])

    def threshold(self) -> float:
        """Unfetched documents score at most this (nothing is unfetched if exhaustive)."""
        return -math.inf if self.exhaustive or not self.scores else min(self.scores)

    def final(self) -> list[Cand]:
        """Documents whose rank no unfetched document can change: score > threshold."""
        t = self.threshold()
        return [self.cand(i) for i, score in enumerate(self.scores) if score > t]

    def session_bests(self) -> dict[int, Cand]:
        """Per session, the best fetched document — only sessions that are settled, i.e.
        whose best scores above the threshold (an unfetched document cannot beat it)."""
        scores, times, seqs = self.scores, self.times, self.seqs
        best: dict[int, int] = {}
        for i, sid in enumerate(self.sids):
            j = best.get(sid)
            if (
                j is None
                or scores[i] > scores[j]
                or (scores[i] == scores[j] and (times[i], seqs[i]) > (times[j], seqs[j]))
            ):
                best[sid] = i
        t = self.threshold()
        return {sid: self.cand(i) for sid, i in best.items() if scores[i] > t}


def fetch(searcher: tantivy.Searcher, query: tantivy.Query, k: int) -> Batch:
    """The top ``k`` documents by score with their rank fields (from fast fields)."""
    total = int(searcher.num_docs)
    size = max(MIN_FETCH, min(k, total))
    hits = searcher.search(query, limit=size, count=False).hits
    if not hits:
        return Batch([], [], [], [], [], exhaustive=True)
    addrs = [addr for _, addr in hits]

    def column(name: str) -> list[int]:
        # Every document has every rank field, so no value is None.
        return cast(list[int], searcher.fast_field_values(name, addrs))

    return Batch(
        scores=[float(score) for score, _ in hits],
        times=column("time"),
        seqs=column("seq"),
        sids=column("sid"),
        addrs=addrs,
        exhaustive=len(hits) < size or size >= total,
    )


def rank_sessions(
    searcher: tantivy.Searcher, schema: tantivy.Schema, base: list[Clause], need: int
) -> list[Cand]:
    """The best document of each of the first ``need`` sessions matching ``base``, in
    session order.

    In rounds over one searcher snapshot: fetch the top ``k`` documents by score.
    Unless the fetch was exhaustive, every unfetched document scores at most the
    ``k``-th score ``t``, so a session whose best fetched score exceeds ``t`` is
    *settled*: its best document and its place are final, score ties included. The
    next round excludes settled sessions and fetches ``4k`` (``16k`` after a round
    that settled nothing: a large tie). Stop once ``need`` sessions are settled
    (every other session scores ``<= t`` and ranks below them) or a fetch is
    exhaustive. Settled sessions are excluded by their ``sid`` ordinal.
    """
    k = GROWTH * need
    settled: dict[int, Cand] = {}
    while True:
        clauses = list(base)
        if settled:
            done = tantivy.Query.term_set_query(schema, "sid", sorted(settled))
            clauses.append((tantivy.Occur.MustNot, done))
        batch = fetch(searcher, tantivy.Query.boolean_query(clauses), k)
        before = len(settled)
        settled.update(batch.session_bests())
        if batch.exhaustive or len(settled) >= need:
            break
        # No progress means a large group of documents ties at the threshold score:
        # all of it must be seen, so grow faster.
        k *= GROWTH if len(settled) > before else GROWTH**2
    return _order_sessions(searcher, list(settled.values()), need)


def rank_events(searcher: tantivy.Searcher, clauses: list[Clause], need: int) -> list[Cand]:
    """At least the first ``need`` documents matching ``clauses`` (all of them if fewer),
    by score desc, time desc, seq desc.

    The fetch-and-grow rule of ``rank_sessions`` with every document its own group:
    documents scoring above the ``k``-th fetched score are final.
    """
    full = tantivy.Query.boolean_query(clauses)
    k = GROWTH * need
    progress = 0
    while True:
        batch = fetch(searcher, full, k)
        cands = batch.final()
        if batch.exhaustive or len(cands) >= need:
            break
        k *= GROWTH if len(cands) > progress else GROWTH**2
        progress = len(cands)
    cands.sort(key=rank_in_session, reverse=True)
    return cands


def _order_sessions(searcher: tantivy.Searcher, bests: list[Cand], need: int) -> list[Cand]:
    """The first ``need`` sessions by (score desc, time desc, session id asc).

    Session ids come from stored documents, read only for runs that tie on
    (score, time) within the first ``need`` places.
    """
    bests.sort(key=lambda c: (c.score, c.time), reverse=True)
    i = 0
    while i < min(need, len(bests)):
        key = (bests[i].score, bests[i].time)
        j = i + 1
        while j < len(bests) and (bests[j].score, bests[j].time) == key:
            j += 1
        if j - i > 1:
            bests[i:j] = sorted(bests[i:j], key=lambda c: load_meta(searcher.doc(c.addr))[0])
        i = j
    return bests[:need]
