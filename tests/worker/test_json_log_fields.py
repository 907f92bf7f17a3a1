"""``--log-format json`` writes a record's fields (a logging call's ``extra=``) as JSON
fields beside the message, so a log collector filters on them; the record's own
attributes are not repeated, and a value JSON cannot hold is written as its repr."""

from __future__ import annotations

import logging

import orjson

from worker.cli.logs import JsonFormatter


def line_of(record: logging.LogRecord) -> dict[str, object]:
    parsed: dict[str, object] = orjson.loads(JsonFormatter().format(record))
    return parsed


def record(msg: str, *args: object, **extra: object) -> logging.LogRecord:
    logger = logging.getLogger("sessionq.test")
    return logger.makeRecord(logger.name, logging.INFO, __file__, 1, msg, args, None, extra=extra)


def test_extra_fields_are_json_fields() -> None:
    line = line_of(record("admin delete: %d deleted", 3, deleted=3, unknown=0))
    assert line["message"] == "admin delete: 3 deleted"
    assert (line["deleted"], line["unknown"]) == (3, 0)
    assert (line["level"], line["logger"]) == ("info", "sessionq.test")


def test_the_record_s_own_attributes_are_not_fields() -> None:
    line = line_of(record("plain"))
    assert set(line) == {"ts", "level", "logger", "message"}


def test_a_value_json_cannot_hold_is_its_repr() -> None:
    line = line_of(record("odd", where={1, 2}.__class__, partitions=[0, 2]))
    assert line["where"] == repr(set)
    assert line["partitions"] == [0, 2]
