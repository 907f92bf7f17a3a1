"""The co-partitioning plan (``indexer.sources.partitions.plan``): balanced, sticky through
rebalances, warm standby copies first, deterministic; and the assignor's user data round
trip (``indexer.kafka.assignor``)."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from indexer.kafka.assignor import LocalState, decode_member, encode_member
from indexer.sources.partitions.plan import MemberState, plan


def loads(result: dict[str, object]) -> list[int]:
    return sorted(len(p.active) for p in result.values())  # type: ignore[attr-defined]


def test_every_partition_has_one_owner_and_loads_differ_by_at_most_one() -> None:
    for members, partitions in itertools.product(range(1, 6), range(0, 13)):
        result = plan(partitions, {f"m{i}": MemberState() for i in range(members)}, 0)
        owned = sorted(p for share in result.values() for p in share.active)
        assert owned == list(range(partitions))
        sizes = [len(s.active) for s in result.values()]
        assert max(sizes) - min(sizes) <= 1


def test_a_new_member_takes_partitions_and_the_others_keep_theirs() -> None:
    before = {
        "a": MemberState(owned=frozenset({0, 2, 4})),
        "b": MemberState(owned=frozenset({1, 3, 5})),
    }
    after = plan(6, {**before, "c": MemberState()}, 0)
    assert len(after["c"].active) == 2
    assert set(after["a"].active) <= {0, 2, 4} and set(after["b"].active) <= {1, 3, 5}
    assert len(after["a"].active) == len(after["b"].active) == 2


def test_a_lost_member_s_partitions_go_to_their_standby_copies() -> None:
    members = {
        "a": MemberState(
            owned=frozenset({0, 1}), standby=frozenset({2}), stores={0: 9, 1: 9, 2: 8}
        ),
        "b": MemberState(
            owned=frozenset({4, 5}), standby=frozenset({3}), stores={4: 9, 5: 9, 3: 7}
        ),
    }  # "c" owned 2 and 3 and is gone
    result = plan(6, members, 1)
    assert 2 in result["a"].active and 3 in result["b"].active


def test_standby_copies_are_on_other_members_and_prefer_warm_stores() -> None:
    members = {
        "a": MemberState(owned=frozenset({0})),
        "b": MemberState(owned=frozenset({1})),
        "c": MemberState(owned=frozenset({2}), stores={0: 100}),
    }
    result = plan(3, members, 1)
    assert 0 in result["c"].standby  # c holds the warmest copy of 0
    for member, share in result.items():
        assert not set(share.active) & set(share.standby), member
    copies = sorted(p for s in result.values() for p in s.standby)
    assert copies == [0, 1, 2]
    assert all(not s.standby for s in plan(3, {"only": MemberState()}, 2).values())


@settings(max_examples=200, deadline=None)
@given(
    partitions=st.integers(0, 12),
    owned=st.lists(st.sets(st.integers(0, 11), max_size=6), min_size=1, max_size=5),
    replicas=st.integers(0, 3),
)
def test_the_plan_is_complete_balanced_and_deterministic(
    partitions: int, owned: list[set[int]], replicas: int
) -> None:
    members = {f"m{i}": MemberState(owned=frozenset(o)) for i, o in enumerate(owned)}
    first = plan(partitions, members, replicas)
    assert first == plan(partitions, dict(reversed(list(members.items()))), replicas)
    assert sorted(p for s in first.values() for p in s.active) == list(range(partitions))
    sizes = [len(s.active) for s in first.values()]
    assert max(sizes) - min(sizes) <= 1
    copies = min(replicas, len(members) - 1)
    for p in range(partitions):
        assert sum(p in s.standby for s in first.values()) == copies


def test_member_user_data_round_trips_and_garbage_reads_as_no_stores() -> None:
    state = LocalState(frozenset({1, 2}), frozenset({3}), {1: 10, 3: 4})
    assert decode_member(encode_member(state)) == MemberState(
        frozenset({1, 2}), frozenset({3}), {1: 10, 3: 4}
    )
    assert decode_member(b"not json") == MemberState()
    assert decode_member(None) == MemberState()
