"""Event-stream records carry any JavaScript string: a lone UTF-16 surrogate (a stream
delta cut mid-emoji) is data, written as its ``\\udxxx`` escape and read back as it was
(docs/host-integration.md, "Strings"), and a dead letter may name one in its reason."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from indexer.errors import RecordRejectedError
from indexer.kafka.client import InRecord
from indexer.kafka.dead_letter import dead_letter
from indexer.model.event import load_json
from indexer.model.records import (
    DeleteRecord,
    EventsRecord,
    HeaderRecord,
    LifecycleRecord,
    decode_record,
    encode_record,
)
from tests.strategies import js_text

JS_TEXT = js_text()
JSON_VALUES: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats(allow_nan=False,
    allow_infinity=False) | JS_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(JS_TEXT, inner, max_size=3),
    max_leaves=10,
)
EVENTS = st.lists(
    st.fixed_dictionaries(
        {"type": JS_TEXT, "seq": st.integers(0, 2**53), "time": st.integers(0, 2**53)},
        optional={"data": JSON_VALUES},
    ),
    min_size=1,
    max_size=3,
)
RECORDS = st.one_of(
    st.builds(
        HeaderRecord, v=st.just(1), kind=st.just("header"),
        header=st.dictionaries(JS_TEXT, JSON_VALUES, max_size=4),
    ),
    st.builds(EventsRecord, v=st.just(1), kind=st.just("events"), session_id=JS_TEXT,
              events=EVENTS),
    st.builds(LifecycleRecord, v=st.just(1), kind=st.just("lifecycle"), session_id=JS_TEXT,
              live=st.booleans()),
    st.builds(DeleteRecord, v=st.just(1), kind=st.just("delete"), session_id=JS_TEXT),
)


@given(RECORDS)
def test_a_record_holding_any_string_round_trips(record: Any) -> None:
    encoded = encode_record(record)
    assert decode_record(encoded) == record
    assert load_json(encoded) == record.model_dump()


def test_a_lone_surrogate_is_written_as_its_escape_and_read_as_written() -> None:
    events = [{"type": "user/message", "seq": 0, "time": 1, "data": {"text": "# Project \ud83d"}}]
    record = EventsRecord(v=1, kind="events", session_id="s", events=events)
    assert b'"# Project \\ud83d"' in encode_record(record)
    # as a JavaScript host writes it: the escape, and any other text as UTF-8
    js = '{"v":1,"kind":"events","session_id":"s","events":[{"type":"user/message","seq":0,'
    js += '"time":1,"data":{"text":"# Project \\ud83d","more":"café 😀"}}]}'
    decoded = decode_record(js.encode())
    assert isinstance(decoded, EventsRecord)
    assert decoded.events[0]["data"] == {"text": "# Project \ud83d", "more": "café 😀"}


@pytest.mark.parametrize(
    "value",
    [b'{"v":1,"kind":"delete","session_id":NaN}', b'{"v":1,"kind":"delete","session_id":1e400}',
     b'{"v":1,"kind":"delete","session_id":"\\ud83d"', b"[" * 5000 + b"]" * 5000],
)
def test_what_javascript_would_not_parse_is_still_refused(value: bytes) -> None:
    with pytest.raises(RecordRejectedError, match="record value is not JSON"):
        decode_record(value)


def test_a_dead_letter_may_name_a_lone_surrogate() -> None:
    source = InRecord("sessionq.events", 0, 7, b"k", b"{}", 1)
    letter = load_json(dead_letter(source, 'unknown session "s\ud83d"', "SESSIONQ_UNKNOWN_SESSION"))
    assert letter["reason"] == 'unknown session "s\ud83d"'
    assert orjson.loads(dead_letter(source, "plain", "X"))["reason"] == "plain"
