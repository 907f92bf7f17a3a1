"""``sessionq stats`` in text: the JSON form laid out for people (worker.cli.stats_text)."""

from __future__ import annotations

from worker.cli.stats_text import stats_lines


def test_scalars_align_and_read_as_numbers_and_sizes() -> None:
    lines = stats_lines(
        {
            "sessions": 1234,
            "live_sessions": 0,
            "index_bytes": 7_020_052,
            "sqlite_bytes": 512,
            "redaction": "on",
            "node": True,
        }
    )
    assert lines == [
        "sessions       1,234",
        "live sessions  0",
        "index bytes    6.7 MiB",
        "sqlite bytes   512 B",
        "redaction      on",
        "node           yes",
    ]


def test_a_mapping_of_rows_is_a_table_without_its_empty_rows() -> None:
    agents = {
        "dsh": {"sessions": 0, "events": 0},
        "claude-code": {"sessions": 226, "events": 14888},
        "codex": {"sessions": 3, "events": 30},
    }
    assert stats_lines({"agents": agents}) == [
        "agents:",
        "               sessions  events",
        "  claude-code       226  14,888",
        "  codex               3      30",
    ]


def test_empty_tables_and_lists_say_none() -> None:
    lines = stats_lines({"offsets": {}, "owned": [], "agents": {"dsh": {"sessions": 0}}})
    assert lines == ["owned  none", "offsets:", "  none", "agents:", "  none"]


def test_a_node_nests_sections_in_sections() -> None:
    node = {
        "partitions": 2,
        "owned": [0, 1],
        "sessions": 5,
        "standby": {"partitions": [], "sessions": 0},
        "per_partition": {
            "0": {"role": "active", "sessions": 3},
            "1": {"role": "active", "sessions": 2},
        },
    }
    assert stats_lines(node) == [
        "partitions  2",
        "owned       0, 1",
        "sessions    5",
        "standby:",
        "  partitions  none",
        "  sessions    0",
        "per partition:",
        "     role    sessions",
        "  0  active         3",
        "  1  active         2",
    ]
