"""Property tests: random valid logs, random batch splits, replays and deletes."""

from __future__ import annotations

import contextlib
import itertools
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from indexer.errors import RecordRejectedError
from indexer.model.records import DeleteRecord, EventsRecord, HeaderRecord
from indexer.store.records.store import Store
from tests.builders import assistant, chunk, header, plain, user
from tests.snapshots import snapshot

WORDS = ["alpha", "beta", "needle", "café", "搜索", "中文", "parser", "AI", "braid"]


@st.composite
def session_logs(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A fold-valid log: appends, log-only events and replaces over current nodes."""
    n = draw(st.integers(min_value=1, max_value=25))
    nodes: list[int] = []
    events: list[dict[str, Any]] = []
    for seq in range(n):
        text = " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=4)))
        kind = draw(st.sampled_from(["user", "assistant", "chunk", "step", "replace"]))
        if kind == "replace" and nodes:
            i = draw(st.integers(0, len(nodes) - 1))
            j = draw(st.integers(i, len(nodes) - 1))
            shadowed = nodes[i : j + 1]
            extra = draw(st.lists(st.integers(0, seq - 1), max_size=2, unique=True)) if seq else []
            sources = list(dict.fromkeys([*shadowed, *extra]))
            events.append(assistant(seq, text, op=(nodes[i], nodes[j]), sources=sources))
            nodes[i : j + 1] = [seq]
        elif kind in ("user", "assistant", "replace"):
            make = user if kind == "user" else assistant
            events.append(make(seq, text))
            nodes.append(seq)
        elif kind == "chunk":
            events.append(chunk(seq, text))
        else:
            events.append(plain(seq, "step/start", {"turn": 1, "step": seq + 1}))
    return events


def _split(events: list[dict[str, Any]], cuts: list[int]) -> list[list[dict[str, Any]]]:
    bounds = sorted({c % (len(events) + 1) for c in cuts} | {0, len(events)})
    return [events[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def _apply(
    data_dir: Path, sessions: dict[str, list[list[dict[str, Any]]]], extra: list[Any]
) -> None:
    store = Store(data_dir)
    try:
        for sid, batches in sessions.items():
            store.apply(HeaderRecord(v=1, kind="header", header=header(sid)))
            for b in batches:
                store.apply(EventsRecord(v=1, kind="events", session_id=sid, events=b))
                store.commit()
        for r in extra:
            with contextlib.suppress(RecordRejectedError):
                store.apply(r)
        store.commit()
    finally:
        store.close()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    logs=st.lists(session_logs(), min_size=1, max_size=3),
    cuts=st.lists(st.integers(0, 30), max_size=6),
    data=st.data(),
)
def test_batch_splits_and_replays_give_the_identical_store(
    tmp_path_factory: Any, logs: list[list[dict[str, Any]]], cuts: list[int], data: st.DataObject
) -> None:
    root: Path = tmp_path_factory.mktemp("prop")
    whole = {f"s{i}": [log] for i, log in enumerate(logs)}
    split = {f"s{i}": _split(log, cuts) for i, log in enumerate(logs)}
    _apply(root / "whole", whole, [])
    _apply(root / "split", split, [])
    assert snapshot(root / "split") == snapshot(root / "whole")
    # replay everything once more (re-delivery from offset 0): nothing changes
    replay = [
        EventsRecord(v=1, kind="events", session_id=sid, events=b)
        for sid, batches in split.items()
        for b in batches
    ]
    _apply(root / "split", {}, replay)
    assert snapshot(root / "split") == snapshot(root / "whole")
    # deleting one session leaves exactly the store without it
    victim = data.draw(st.sampled_from(sorted(whole)))
    _apply(root / "split", {}, [DeleteRecord(v=1, kind="delete", session_id=victim)])
    _apply(root / "without", {k: v for k, v in whole.items() if k != victim}, [])
    assert snapshot(root / "split") == snapshot(root / "without")
