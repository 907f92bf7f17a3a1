"""Request ids drawn from a pool of OS randomness are still version-4 UUIDs, distinct
across pool refills."""

from __future__ import annotations

import uuid

from worker.contract.ids import POOL_IDS, RequestIds


def test_ids_are_distinct_random_uuids_across_refills() -> None:
    ids = RequestIds()
    drawn = [ids.new() for _ in range(3 * POOL_IDS + 5)]
    assert len(set(drawn)) == len(drawn)
    for text in drawn:
        parsed = uuid.UUID(text)
        assert str(parsed) == text
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
    assert len({RequestIds().new() for _ in range(64)}) == 64  # each pool its own draw
