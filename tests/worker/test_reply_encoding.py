"""A reply's bytes: ``encode_reply`` (the HTTP front end's, no model in between) is the
envelope ``reply_for(...).encode()`` sends over Kafka, for every outcome and any text
(a lone surrogate read from a stored event travels as its ``\\udxxx`` escape)."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.strategies import js_text
from worker.contract.envelopes import Reply, decode_reply, encode_reply, reply_for
from worker.contract.errors import ToolFailure
from worker.contract.outcome import ToolReply

_JSON: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | js_text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(js_text(max_size=4), inner),
    max_leaves=8,
)
_OUTCOMES = st.one_of(
    st.builds(ToolReply, output=st.one_of(st.none(), js_text())),
    st.builds(
        ToolReply,
        error=st.builds(ToolFailure, code=st.text(min_size=1), message=js_text()),
        cancel_reason=_JSON,
    ),
)


@settings(max_examples=300)
@given(st.text(min_size=1), _OUTCOMES)
def test_encode_reply_is_the_reply_envelope(request_id: str, result: ToolReply) -> None:
    encoded = encode_reply(request_id, result)
    assert encoded == reply_for(request_id, result).encode()
    assert decode_reply(encoded) == reply_for(request_id, result)


def test_each_outcome_has_its_members() -> None:
    ok = orjson.loads(encode_reply("r1", ToolReply(output=None)))
    assert ok == {"v": 1, "id": "r1", "ok": True, "text": ""}
    failed = ToolReply(error=ToolFailure("SESSION_NOT_FOUND", "session was not found"))
    assert orjson.loads(encode_reply("r2", failed)) == {
        "v": 1,
        "id": "r2",
        "ok": False,
        "error": {"code": "SESSION_NOT_FOUND", "message": "session was not found"},
    }
    cancelled = ToolReply(error=ToolFailure("CANCELLED", "cancelled"), cancel_reason={"by": 1})
    assert orjson.loads(encode_reply("r3", cancelled))["reason"] == {"by": 1}
    assert isinstance(decode_reply(encode_reply("r3", cancelled)), Reply)


def test_a_text_holding_a_lone_surrogate_goes_as_the_stored_escape() -> None:
    encoded = encode_reply("r4", ToolReply(output='Session s — Project \ud83d'))
    assert b"Project \\ud83d" in encoded
    assert decode_reply(encoded).text == "Session s — Project \ud83d"
