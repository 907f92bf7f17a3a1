"""A session id holding a lone UTF-16 surrogate (a JavaScript host's string cut
mid-character) names no stored session: as a caller, a target or a filter it gets the
answer an unknown id gets, never a failed query (its lookup used to reach SQLite, which
cannot encode it: SESSION_QUERY_TOOL_FAILED and a traceback in the log)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import header, user
from tests.fixtures.stores import StoreFactory
from worker.calls.pipeline import Pipeline
from worker.tools.access import Caller

CALLER = "11111111-0000-4000-8000-000000000001"
CASES: list[tuple[str, dict[str, Any], str]] = [
    ("session_search", {"query": "hello"}, "{id}"),
    ("session_trace", {"session_id": "{id}"}, CALLER),
    ("session_event_read", {"session_id": "{id}", "seq": 0}, CALLER),
    ("session_event_search", {"session_id": "{id}", "query": "hello"}, CALLER),
    ("session_event_trace", {"session_id": "{id}", "seq": 0}, CALLER),
    ("session_search", {"query": "hello", "session_ids": ["{id}"]}, CALLER),
]


def _filled(value: Any, sid: str) -> Any:
    if isinstance(value, str):
        return value.replace("{id}", sid)
    if isinstance(value, list):
        return [_filled(v, sid) for v in value]
    if isinstance(value, dict):
        return {k: _filled(v, sid) for k, v in value.items()}
    return value


@pytest.mark.parametrize(("tool", "arguments", "caller"), CASES)
async def test_an_id_cut_mid_character_is_answered_as_an_unknown_id(
    store_factory: StoreFactory, tool: str, arguments: dict[str, Any], caller: str
) -> None:
    service = store_factory([(header(CALLER), [user(0, "hello there")])])
    pipeline = Pipeline(service)
    answers = []
    for sid in (
        "22222222-0000-4000-8000-00000000000\ud83d",
        "22222222-0000-4000-8000-0000000000ff",
    ):
        result = await pipeline.call(tool, _filled(arguments, sid), Caller(_filled(caller, sid)))
        answers.append(
            ("ok", result.text)
            if result.error is None
            else (result.error.code, result.error.message)
        )
    cut, unknown = answers
    assert cut == unknown
    assert cut[0] != "SESSION_QUERY_TOOL_FAILED"
