"""The erasure scan's own control (``tests.erasure_scan``): two markers stored side by side
are each found as a literal in the data dir, whichever the index's doc store holds first.

LZ4 extends a match as far as the bytes agree, so a marker that begins (or ends) like one
stored before it, behind the same bytes, loses its first (or last) letters to the match;
a scan for it then finds nothing although its text is there, and an erasure test either
fails its "found before the delete" control or proves nothing.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from indexer.model.records import EventsRecord, HeaderRecord
from indexer.store.records.store import Store
from tests.builders import header, user
from tests.erasure_scan import marker, scan

SEEDS = range(16)


def store_sessions(data: Path, texts: list[tuple[str, str]]) -> None:
    """Each (session id, text) as six user messages ``<text> message <n>``, one batch."""
    store = Store(data)
    try:
        for sid, text in texts:
            store.apply(HeaderRecord(v=1, kind="header", header=header(sid, cwd=f"/w/{sid}")))
            events = [user(seq, f"{text} message {seq}") for seq in range(6)]
            store.apply(EventsRecord(v=1, kind="events", session_id=sid, events=events))
        store.commit()
    finally:
        store.close()


@pytest.mark.parametrize("seed", SEEDS)
def test_both_markers_are_found_in_either_order(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    first = marker(rng)
    second = marker(rng, avoid=[first])
    for order, texts in {
        "first-then-second": [("a", first), ("b", second)],
        "second-then-first": [("b", second), ("a", first)],
    }.items():
        data = tmp_path / order
        store_sessions(data, texts)
        found = scan(data, [first.encode(), second.encode()])
        assert all(found.values()), (order, first, second, found)


def test_markers_differ_in_their_first_and_last_letters() -> None:
    rng = random.Random(3)
    taken: list[str] = []
    for _ in range(6):
        taken.append(marker(rng, avoid=taken))
    assert len({m[0] for m in taken}) == len(taken)
    assert len({m[-1] for m in taken}) == len(taken)
