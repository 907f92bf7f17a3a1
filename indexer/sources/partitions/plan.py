"""The co-partitioning assignment plan: which member owns partition p of both topics,
and which members keep warm standby copies of it (pure: no Kafka here).

Input is what every member said when it joined (``MemberState``: the partitions it
owned, the standby copies it kept, and the next offset of each local store). Order:

1. sticky — a partition stays with its previous owner while that owner is under the
   balanced capacity (``ceil(P / M)``); two claimants: the one whose store is furthest;
2. warm — each unowned partition goes to the member under capacity whose local store
   is furthest (a standby first), else the least loaded member (ties by member id);
3. balanced — while two members differ by more than one partition, the most loaded
   gives one to the least loaded (the partition the receiver holds the warmest copy of);
4. standby — each partition gets ``min(replicas, M - 1)`` members other than its owner,
   the warmest first, then the ones keeping the fewest copies.

The same input gives the same plan on every leader (sorted ids, no randomness).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["MemberPlan", "MemberState", "plan"]

NO_STORE = -1  # the "offset" of a partition a member holds no store for


@dataclass(frozen=True, slots=True)
class MemberState:
    """What one member reports when it joins."""

    owned: frozenset[int] = frozenset()
    standby: frozenset[int] = frozenset()
    stores: Mapping[int, int] = field(default_factory=dict)  # partition -> next offset

    def warmth(self, partition: int) -> int:
        return self.stores.get(partition, NO_STORE)


@dataclass(slots=True)
class MemberPlan:
    """One member's share: the partitions it owns (both topics) and its standby copies."""

    active: list[int] = field(default_factory=list)
    standby: list[int] = field(default_factory=list)


def plan(
    partitions: int, members: Mapping[str, MemberState], replicas: int
) -> dict[str, MemberPlan]:
    """The assignment of ``partitions`` co-partitions over ``members`` (module docstring)."""
    ids = sorted(members)
    out = {m: MemberPlan() for m in ids}
    if not ids:
        return out
    capacity = math.ceil(partitions / len(ids))
    owner: dict[int, str] = {}
    # 1. sticky
    for p in range(partitions):
        claims = [m for m in ids if p in members[m].owned]
        claims.sort(key=lambda m: (-members[m].warmth(p), m))
        for m in claims:
            if len(out[m].active) < capacity:
                owner[p] = m
                out[m].active.append(p)
                break
    # 2. warm
    for p in range(partitions):
        if p in owner:
            continue
        open_ = [m for m in ids if len(out[m].active) < capacity]
        chosen = min(open_, key=lambda m: (-members[m].warmth(p), len(out[m].active), m))
        owner[p] = chosen
        out[chosen].active.append(p)
    # 3. balanced
    while True:
        most = max(ids, key=lambda m: (len(out[m].active), m))
        least = min(ids, key=lambda m: (len(out[m].active), m))
        if len(out[most].active) - len(out[least].active) <= 1:
            break
        give = max(out[most].active, key=lambda p: (members[least].warmth(p), p))
        out[most].active.remove(give)
        out[least].active.append(give)
        owner[give] = least
    # 4. standby
    copies = min(max(replicas, 0), len(ids) - 1)
    for p in range(partitions):
        others = [m for m in ids if m != owner[p]]
        others.sort(key=lambda m: (-members[m].warmth(p), len(out[m].standby), m))
        for m in others[:copies]:
            out[m].standby.append(p)
    for member_plan in out.values():
        member_plan.active.sort()
        member_plan.standby.sort()
    return out
