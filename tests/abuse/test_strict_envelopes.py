"""Issue 10 item 8: strict integers in request envelopes and a nesting bound on every
record, checked before pydantic (or the store's recursive walks) sees the value."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from indexer.errors import INVALID_RECORD, RecordRejectedError
from indexer.model.records import MAX_NESTING, decode_record
from worker.contract.envelopes import (
    EnvelopeError,
    InvalidRequestError,
    ToolRequest,
    decode_request,
)


def _request(**change: Any) -> dict[str, Any]:
    return {
        "v": 1,
        "kind": "request",
        "id": "r1",
        "reply_to": "replies",
        "tool": "session_trace",
        "arguments": {},
        **change,
    }


def _nested(depth: int) -> str:
    """JSON text of ``depth`` nested arrays (orjson will not *write* that deep)."""
    return "[" * depth + "1" + "]" * depth


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"timeout_ms": True}, "request.timeout_ms"),
        ({"timeout_ms": "100"}, "request.timeout_ms"),
        ({"timeout_ms": 100.0}, "request.timeout_ms"),
        ({"caller": {"session_id": "s", "step_seq": True}}, "request.caller.step_seq"),
        ({"caller": {"session_id": "s", "step_seq": "3"}}, "request.caller.step_seq"),
        ({"caller": {"session_id": "s", "min_seq": False}}, "request.caller.min_seq"),
        ({"caller": {"session_id": "s", "min_seq": "0"}}, "request.caller.min_seq"),
    ],
)
def test_integer_fields_refuse_bools_and_strings(change: dict[str, Any], where: str) -> None:
    with pytest.raises(InvalidRequestError) as info:
        decode_request(orjson.dumps(_request(**change)))
    assert info.value.code == "INVALID_ARGS"
    assert info.value.request_id == "r1"
    assert info.value.reason.startswith(f"invalid request envelope at {where}:"), info.value.reason


def test_real_integers_still_accepted() -> None:
    decoded = decode_request(
        orjson.dumps(
            _request(timeout_ms=100, caller={"session_id": "s", "step_seq": 3, "min_seq": 0})
        )
    )
    assert isinstance(decoded, ToolRequest)
    assert decoded.timeout_ms == 100
    assert decoded.caller is not None and decoded.caller.step_seq == 3


def _events_record(payload: str) -> bytes:
    event = '{"v": 1, "seq": 0, "type": "user/message", "ts": 0, "data": ' + payload + "}"
    return ('{"v": 1, "kind": "events", "session_id": "s", "events": [' + event + "]}").encode()


def test_deeply_nested_event_is_rejected_as_invalid_record_not_internal() -> None:
    with pytest.raises(RecordRejectedError) as info:
        decode_record(_events_record(_nested(1010)))
    assert info.value.code == INVALID_RECORD
    assert f"nested deeper than {MAX_NESTING} levels" in info.value.message


def test_nesting_at_the_limit_is_not_refused_for_depth() -> None:
    # The record adds 4 levels (record, events, event, data) around the payload.
    value = _events_record(_nested(MAX_NESTING - 5))
    try:
        decode_record(value)
    except RecordRejectedError as exc:  # other envelope problems are fine, depth is not
        assert "nested deeper" not in exc.message


def _raw_request(arguments: str) -> bytes:
    text = orjson.dumps(_request(arguments=0)).decode()
    return text.replace('"arguments":0', f'"arguments":{arguments}').encode()


def test_deeply_nested_request_is_refused_with_a_named_reason() -> None:
    with pytest.raises(InvalidRequestError) as info:
        decode_request(_raw_request(_nested(1010)))
    assert info.value.code == "INVALID_ARGS"
    assert f"nested deeper than {MAX_NESTING} levels" in info.value.reason
    # Without a usable id and reply topic it is dead-lettered, with the same reason.
    with pytest.raises(EnvelopeError) as dead:
        decode_request(('{"v": 1, "kind": "request", "arguments": ' + _nested(1010) + "}").encode())
    assert f"nested deeper than {MAX_NESTING} levels" in dead.value.message


# ---- request size (item 7) -------------------------------------------------------------------
def test_an_oversized_request_record_is_refused_unparsed() -> None:
    from worker.contract.envelopes import MAX_REQUEST_BYTES

    big = orjson.dumps(_request(arguments={"query": "x", "pad": "p" * MAX_REQUEST_BYTES}))
    with pytest.raises(EnvelopeError) as info:
        decode_request(big)
    assert info.value.message == (
        f"request record is {len(big)} bytes; the maximum is {MAX_REQUEST_BYTES} (not parsed)"
    )
    # A cancel is a request record too: a 5 MB reason is never parsed.
    fat = orjson.dumps({"v": 1, "kind": "cancel", "id": "r1", "reason": "r" * 5_000_000})
    with pytest.raises(EnvelopeError, match="the maximum is"):
        decode_request(fat)
    just = orjson.dumps(_request(arguments={"pad": "p" * (MAX_REQUEST_BYTES - 200)}))
    assert len(just) <= MAX_REQUEST_BYTES
    assert isinstance(decode_request(just), ToolRequest)
