"""The wait between connection attempts to a broker that is gone (indexer.kafka.backoff):
doubling per failure, capped, jittered below the nominal wait, never above."""

from __future__ import annotations

import logging

import pytest

from indexer.kafka.backoff import BASE_S, CAP_S, JITTER, SETTLE_S, Reachability, wait_after


def test_the_wait_doubles_per_failure_up_to_the_cap() -> None:
    waits = [wait_after(n, 0.0) for n in range(1, 12)]
    assert waits[:4] == [BASE_S, 2 * BASE_S, 4 * BASE_S, 8 * BASE_S]
    assert max(waits) == CAP_S and waits[-1] == CAP_S
    assert wait_after(10_000, 0.0) == CAP_S  # no overflow however long the broker is gone


def test_jitter_only_shortens_the_wait() -> None:
    assert wait_after(3, 0.999) == pytest.approx(4 * BASE_S * (1 - JITTER * 0.999))
    assert all(wait_after(n, 0.5) < wait_after(n, 0.0) for n in range(1, 10))


def test_each_change_of_reachability_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="sessionq.kafka")
    now = [100.0]
    reach = Reachability("127.0.0.1:1", clock=lambda: now[0])
    reach.reached()  # up from the start: nothing to say
    for _ in range(3):
        reach.failed()
    now[0] += SETTLE_S
    for _ in range(3):
        reach.reached()
    reach.failed()
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 3, said
    assert "127.0.0.1:1 is unreachable" in said[0] and "reachable again" in said[1]
    assert "is unreachable" in said[2]


def test_a_connection_from_before_the_broker_went_is_no_comeback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """aiokafka hands back a connection it opened before the broker stopped: a success in
    the same moment as the failure must not say "reachable again" (and then "unreachable"
    a second time), as it did in CI when the broker was stopped under a node."""
    caplog.set_level(logging.INFO, logger="sessionq.kafka")
    now = [100.0]
    reach = Reachability("127.0.0.1:1", clock=lambda: now[0])
    reach.failed()
    now[0] += 0.004
    reach.reached()  # the cached connection, 4 ms later
    reach.failed()
    assert [r.getMessage() for r in caplog.records] == [
        "Kafka at 127.0.0.1:1 is unreachable: retrying with backoff (at most 8 s apart)"
    ]
    now[0] += SETTLE_S
    reach.reached()
    assert caplog.records[-1].getMessage() == "Kafka at 127.0.0.1:1 is reachable again"
