"""The co-partitioning assignor of ``sessionq node``: partition p of the events topic and
of the requests topic always go to the same member (the plan is
``indexer.sources.partitions.plan``; this module is its aiokafka side).

Kafka runs the group; the leader member runs ``assign``. Stickiness and standby copies
travel in the protocol's user data, as Kafka Streams does it:

* a member's join metadata: ``{"v":1,"owned":[p...],"standby":[p...],"stores":{"p":next
  offset}}`` — what it owns now and how far each of its local stores is;
* a member's assignment: the topic partitions it owns (both topics, the same numbers)
  and ``{"v":1,"standby":[p...],"partitions":P}`` — the standby copies it keeps.

Unequal partition counts (a topic grown after the nodes started) assign only the
partitions both topics have, and say so in the log; a node refuses to start on them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)

from indexer.sources.partitions.plan import MemberState, plan

log = logging.getLogger("sessionq.node")
ASSIGNOR_NAME = "sessionq-copartition"


@dataclass(frozen=True, slots=True)
class LocalState:
    """What this member reports when it (re)joins."""

    owned: frozenset[int] = frozenset()
    standby: frozenset[int] = frozenset()
    stores: Mapping[int, int] = field(default_factory=dict)


def encode_member(state: LocalState) -> bytes:
    return orjson.dumps(
        {
            "v": 1,
            "owned": sorted(state.owned),
            "standby": sorted(state.standby),
            "stores": {str(p): o for p, o in sorted(state.stores.items())},
        }
    )


def decode_member(data: bytes | None) -> MemberState:
    """A member's join user data; anything unreadable is a member with no stores."""
    try:
        raw: Any = orjson.loads(data or b"{}")
        return MemberState(
            owned=frozenset(int(p) for p in raw.get("owned", [])),
            standby=frozenset(int(p) for p in raw.get("standby", [])),
            stores={int(p): int(o) for p, o in raw.get("stores", {}).items()},
        )
    except (orjson.JSONDecodeError, AttributeError, TypeError, ValueError):
        return MemberState()


class CoPartitionAssignor(AbstractPartitionAssignor):  # type: ignore[misc]
    """One instance per node (aiokafka calls it on the instance it was given)."""

    def __init__(
        self,
        topics: tuple[str, str],
        standby_replicas: int,
        local: Callable[[], LocalState],
    ) -> None:
        """``topics``: (events, requests); ``local``: this member's state at join time."""
        self.topics = topics
        self.standby_replicas = standby_replicas
        self._local = local
        self.standby: frozenset[int] = frozenset()  # from the last assignment
        self.partitions = 0

    @property
    def name(self) -> str:
        return ASSIGNOR_NAME

    def metadata(self, topics: Iterable[str]) -> ConsumerProtocolMemberMetadata:
        return ConsumerProtocolMemberMetadata(0, sorted(topics), encode_member(self._local()))

    def assign(
        self, cluster: Any, members: Mapping[str, ConsumerProtocolMemberMetadata]
    ) -> dict[str, ConsumerProtocolMemberAssignment]:
        counts = [len(cluster.partitions_for_topic(t) or ()) for t in self.topics]
        if counts[0] != counts[1]:
            log.error(
                "topics %s and %s have %d and %d partitions: only the first %d are assigned",
                *self.topics,
                *counts,
                min(counts),
            )
        states = {m: decode_member(meta.user_data) for m, meta in members.items()}
        plans = plan(min(counts), states, self.standby_replicas)
        out = {}
        for member, share in plans.items():
            data = orjson.dumps({"v": 1, "standby": share.standby, "partitions": min(counts)})
            assignment = [(topic, share.active) for topic in self.topics]
            out[member] = ConsumerProtocolMemberAssignment(0, assignment, data)
        log.info(
            "assigned %d partitions over %d members: %s",
            min(counts),
            len(plans),
            {m: (s.active, s.standby) for m, s in plans.items()},
        )
        return out

    def on_assignment(self, assignment: ConsumerProtocolMemberAssignment) -> None:
        try:
            raw: Any = orjson.loads(assignment.user_data or b"{}")
            self.standby = frozenset(int(p) for p in raw.get("standby", []))
            self.partitions = int(raw.get("partitions", 0))
        except (orjson.JSONDecodeError, AttributeError, TypeError, ValueError):
            self.standby = frozenset()
