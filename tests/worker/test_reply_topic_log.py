"""The missing-reply-topic warning (``worker.transports.kafka.reply_topics.MissingTopicLog``) is
rate-limited for the whole worker, not per topic name: a flood naming a new topic per
record is one line at once and one summary line per ``LOG_EVERY_S``."""

from __future__ import annotations

import logging

import pytest

from worker.transports.kafka.reply_topics import LOG_EVERY_S, MissingTopicLog

T0 = 1000.0


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "sessionq.worker"]


def test_a_flood_of_distinct_topics_is_one_line_then_one_summary(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="sessionq.worker")
    missing = MissingTopicLog()
    for i in range(3_000):
        missing.note(f"replies.nx-{i}", T0 + i * 0.01)  # 30 s of records
    missing.flush(T0 + LOG_EVERY_S - 1)
    assert len(lines(caplog)) == 1
    assert "'replies.nx-0' does not exist" in lines(caplog)[0]

    missing.flush(T0 + LOG_EVERY_S)
    assert len(lines(caplog)) == 2
    summary = lines(caplog)[1]
    assert "2999 more requests named 2999 missing reply topics" in summary
    assert "'replies.nx-2999'" in summary

    missing.flush(T0 + 3 * LOG_EVERY_S)  # nothing tallied since: nothing to say
    assert len(lines(caplog)) == 2
    missing.note("replies.later", T0 + 3 * LOG_EVERY_S)  # after a quiet interval: at once
    assert len(lines(caplog)) == 3 and "'replies.later' does not exist" in lines(caplog)[2]


def test_the_tally_reaches_the_log_with_the_next_record_after_the_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="sessionq.worker")
    missing = MissingTopicLog()
    missing.note("replies.a", T0)
    missing.note("replies.a", T0 + 1)
    missing.note("replies.b", T0 + 2)
    missing.note("replies.c", T0 + LOG_EVERY_S + 5)
    assert len(lines(caplog)) == 2
    assert "2 more requests named 2 missing reply topics" in lines(caplog)[1]
    missing.flush(T0 + 2 * LOG_EVERY_S + 5)
    assert len(lines(caplog)) == 3 and "1 more requests named 1 missing" in lines(caplog)[2]
