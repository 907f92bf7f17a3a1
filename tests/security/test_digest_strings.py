"""A request's digest (``req``) over strings JavaScript can hold: a lone UTF-16 surrogate
is canonicalized as JavaScript's JCS writes it (JSON.stringify's lowercase ``\\udxxx``),
and the host and the worker compute the same digest for any string a request carries
(docs/host-integration.md, "Strings")."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from indexer.model.event import dump_json
from tests.strategies import js_text
from worker.authn.binding import Binding, envelope_digest
from worker.contract.envelopes import ToolRequest, decode_request

JS_TEXT = js_text()

# Produced with Node 20: JSON.parse of this text, then JavaScript's reference JCS (the
# "canonicalize" package's algorithm: keys sorted by UTF-16 code units, every other
# value as JSON.stringify writes it), UTF-8, SHA-256, base64url.
VECTOR = (
    '{"v": 1, "kind": "request", "id": "a6b1f0de-2f49-4f3e-8d7c-6f1b2c3d4e5f",'
    ' "reply_to": "sessionq.replies", "tool": "session_search",'
    ' "arguments": {"query": "# Project \\ud83d", "\\udc00k": "caf\\u00e9 \\ud83d\\ude00 \\ude00",'
    ' "limit": 10},'
    ' "caller": {"token": "ignored", "session_id": "3f0c6a52", "step_seq": 2},'
    ' "timeout_ms": 30000}'
)
JS_CANONICAL = (
    '{"arguments":{"limit":10,"query":"# Project \\ud83d","\\udc00k":"café 😀 \\ude00"},'
    '"caller":{"session_id":"3f0c6a52","step_seq":2},"id":"a6b1f0de-2f49-4f3e-8d7c-6f1b2c3d4e5f",'
    '"kind":"request","reply_to":"sessionq.replies","timeout_ms":30000,"tool":"session_search",'
    '"v":1}'
)
JS_REQ = "Xp1hJ66Dck5fIH8kVGK9nVoKfn6ZJAOXFwjDcqEB7aU"


def test_a_lone_surrogate_is_canonicalized_as_javascript_writes_it() -> None:
    digest = hashlib.sha256(JS_CANONICAL.encode()).digest()
    assert base64.urlsafe_b64encode(digest).rstrip(b"=").decode() == JS_REQ
    assert envelope_digest(json.loads(VECTOR)) == JS_REQ
    decoded = decode_request(VECTOR.encode())
    assert Binding(decoded).digest == JS_REQ


def test_a_pair_held_as_two_code_points_is_its_character() -> None:
    """JavaScript sees one astral character in two adjacent halves, however they came."""
    joined = {"v": 1, "arguments": {"q": "\U0001f600"}}
    split = {"v": 1, "arguments": {"q": "\ud83d\ude00"}}
    assert envelope_digest(split) == envelope_digest(joined)


def test_numbers_jcs_refuses_stay_refused_beside_a_lone_surrogate() -> None:
    assert envelope_digest({"q": "\ud83d", "n": 2**53}) is None
    assert envelope_digest({"q": "\ud83d", "n": float("nan")}) is None
    assert envelope_digest({"\ud83d": 1, 2: 1}) is None  # a non-string key


@given(arguments=st.dictionaries(JS_TEXT, JS_TEXT | st.lists(JS_TEXT, max_size=3), max_size=4),
       session_id=JS_TEXT)
def test_the_host_and_the_worker_compute_the_same_digest(
    arguments: dict[str, Any], session_id: str
) -> None:
    request = {
        "v": 1, "kind": "request", "id": "r-1", "reply_to": "sessionq.replies",
        "tool": "session_search", "arguments": arguments, "caller": {"session_id": session_id},
    }
    host = envelope_digest(request)
    assert host is not None
    decoded = decode_request(dump_json({**request, "caller": {"session_id": session_id,
                                                               "token": "t"}}))
    assert isinstance(decoded, ToolRequest)
    assert Binding(decoded).digest == host
