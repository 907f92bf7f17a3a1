"""``OffsetTracker``: a partition commits only up to its lowest offset still in flight."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from worker.transports.kafka.offsets import OffsetTracker


def test_nothing_started_is_nothing_to_commit() -> None:
    tracker = OffsetTracker()
    assert tracker.committable() == {}
    assert tracker.in_flight() == 0


def test_a_finished_offset_commits_as_the_next_offset() -> None:
    tracker = OffsetTracker()
    tracker.started(0, 7)
    assert tracker.committable() == {0: 7}  # in flight: not committable yet
    tracker.finished(0, 7)
    assert tracker.committable() == {0: 8}
    assert tracker.in_flight() == 0


def test_out_of_order_completion_never_commits_past_an_unfinished_offset() -> None:
    tracker = OffsetTracker()
    for offset in range(5):
        tracker.started(0, offset)
    tracker.finished(0, 4)
    tracker.finished(0, 2)
    tracker.finished(0, 3)
    assert tracker.committable() == {0: 0}  # 0 is still in flight
    tracker.finished(0, 0)
    assert tracker.committable() == {0: 1}  # 1 is the lowest unfinished
    assert tracker.in_flight() == 1
    tracker.finished(0, 1)
    assert tracker.committable() == {0: 5}  # last contiguous finished (4) + 1


def test_gaps_in_the_offsets_do_not_hold_back_the_commit() -> None:
    """Kafka offsets need not be contiguous (compaction, transaction markers)."""
    tracker = OffsetTracker()
    tracker.started(0, 10)
    tracker.started(0, 13)
    tracker.finished(0, 10)
    assert tracker.committable() == {0: 13}
    tracker.finished(0, 13)
    assert tracker.committable() == {0: 14}


def test_partitions_are_independent() -> None:
    tracker = OffsetTracker()
    tracker.started(0, 0)
    tracker.started(1, 100)
    tracker.started(1, 101)
    tracker.started(2, 5)
    tracker.finished(1, 101)
    tracker.finished(2, 5)
    assert tracker.committable() == {0: 0, 1: 100, 2: 6}
    tracker.finished(1, 100)
    assert tracker.committable() == {0: 0, 1: 102, 2: 6}
    assert tracker.in_flight() == 1


def test_repeated_committable_calls_are_stable_and_do_not_consume_anything() -> None:
    tracker = OffsetTracker()
    tracker.started(0, 0)
    tracker.started(0, 1)
    tracker.finished(0, 0)
    first = tracker.committable()
    assert first == {0: 1}
    assert tracker.committable() == first
    assert tracker.committable() == first
    assert tracker.in_flight() == 1
    tracker.finished(0, 1)
    assert tracker.committable() == {0: 2}
    assert tracker.committable() == {0: 2}  # still there after everything finished


def test_forget_drops_revoked_partitions_only() -> None:
    tracker = OffsetTracker()
    tracker.started(0, 3)
    tracker.started(1, 8)
    tracker.started(2, 1)
    tracker.finished(2, 1)
    tracker.forget([0, 2, 9])  # 9 was never assigned: ignored
    assert tracker.committable() == {1: 8}
    assert tracker.in_flight() == 1
    # A late finish of a revoked offset must not resurrect the partition.
    tracker.finished(0, 3)
    assert tracker.committable() == {1: 8}
    # Re-assigned later, the partition starts from what is delivered then.
    tracker.started(0, 50)
    assert tracker.committable() == {0: 50, 1: 8}
    tracker.finished(0, 50)
    assert tracker.committable() == {0: 51, 1: 8}


def test_finishing_an_unknown_offset_is_a_no_op() -> None:
    tracker = OffsetTracker()
    tracker.finished(4, 1)
    assert tracker.committable() == {}
    tracker.started(0, 2)
    tracker.finished(0, 99)
    tracker.finished(0, 2)
    tracker.finished(0, 2)  # twice
    assert tracker.committable() == {0: 3}


def test_a_redelivered_lower_offset_holds_the_commit_back() -> None:
    """After a seek back (a failed batch), offsets below the high-water mark are in flight
    again and must not be skipped."""
    tracker = OffsetTracker()
    tracker.started(0, 5)
    tracker.finished(0, 5)
    assert tracker.committable() == {0: 6}
    tracker.started(0, 3)
    assert tracker.committable() == {0: 3}
    tracker.finished(0, 3)
    assert tracker.committable() == {0: 6}


@st.composite
def schedules(draw: st.DrawFn) -> tuple[dict[int, list[int]], list[tuple[str, int, int]]]:
    """Per-partition offsets (increasing, possibly with gaps), and one interleaving of all
    starts and finishes: each partition's starts in offset order (Kafka delivers them so),
    finishes in any order after their start, partitions mixed arbitrarily."""
    partitions = draw(st.lists(st.integers(0, 5), min_size=1, max_size=3, unique=True))
    offsets: dict[int, list[int]] = {}
    for p in partitions:
        base = draw(st.integers(0, 1000))
        gaps = draw(st.lists(st.integers(1, 3), min_size=1, max_size=12))
        current, mine = base, []
        for gap in gaps:
            mine.append(current)
            current += gap
        offsets[p] = mine
    next_start = {p: 0 for p in partitions}
    started: list[tuple[int, int]] = []
    steps: list[tuple[str, int, int]] = []
    total = sum(len(v) for v in offsets.values())
    while len(steps) < 2 * total:
        can_start = [p for p in partitions if next_start[p] < len(offsets[p])]
        choices = [("start", p) for p in can_start] + [("finish", i) for i in range(len(started))]
        kind, which = draw(st.sampled_from(choices))
        if kind == "start":
            offset = offsets[which][next_start[which]]
            next_start[which] += 1
            started.append((which, offset))
            steps.append(("start", which, offset))
        else:
            p, offset = started.pop(which)
            steps.append(("finish", p, offset))
    return offsets, steps


@given(schedules())
def test_commit_never_passes_an_unfinished_offset_and_reaches_the_end(
    schedule: tuple[dict[int, list[int]], list[tuple[str, int, int]]],
) -> None:
    offsets, steps = schedule
    tracker = OffsetTracker()
    unfinished = {p: set(v) for p, v in offsets.items()}  # includes not yet started
    previous: dict[int, int] = {}
    for kind, p, offset in steps:
        if kind == "start":
            tracker.started(p, offset)
        else:
            tracker.finished(p, offset)
            unfinished[p].discard(offset)
        committed = tracker.committable()
        for partition, value in committed.items():
            if unfinished[partition]:
                assert value <= min(unfinished[partition])
            # With in-order delivery the committed offset only moves forward.
            assert value >= previous.get(partition, value)
            previous[partition] = value
    assert tracker.committable() == {p: v[-1] + 1 for p, v in offsets.items()}
    assert tracker.in_flight() == 0


@given(
    st.lists(st.integers(0, 30), min_size=1, max_size=25, unique=True),
    st.randoms(use_true_random=False),
)
def test_any_start_order_never_commits_past_a_started_unfinished_offset(
    offsets: list[int], rnd: random.Random
) -> None:
    """Even when starts arrive in any order, the committed offset stays at or below every
    started-but-unfinished offset; once all are finished it is the highest started + 1."""
    tracker = OffsetTracker()
    open_: set[int] = set()
    pending = list(offsets)
    while pending or open_:
        if pending and (not open_ or rnd.random() < 0.5):
            offset = pending.pop()
            tracker.started(0, offset)
            open_.add(offset)
        else:
            offset = rnd.choice(sorted(open_))
            tracker.finished(0, offset)
            open_.discard(offset)
        committed = tracker.committable()[0]
        if open_:
            assert committed == min(open_)
    assert tracker.committable() == {0: max(offsets) + 1}
