"""Events to transcript blocks: pairing, merging and summing up (``worker.reader.blocks``)."""

from __future__ import annotations

from typing import Any

import orjson

from indexer.model import SessionEvent
from tests.builders import assistant, chunk, plain, user
from tests.reader.test_reader_api import tool_call, tool_result
from worker.reader.blocks import MAX_TEXT, transcript_blocks


def events(*objs: dict[str, Any]) -> list[SessionEvent]:
    return [SessionEvent.from_obj(o, orjson.dumps(o)) for o in objs]


def kinds(blocks: list[dict[str, Any]]) -> list[str]:
    return [b["kind"] for b in blocks]


def test_a_call_and_its_result_are_one_block_and_a_late_result_stands_alone() -> None:
    blocks = transcript_blocks(
        events(
            tool_call(0, "a", "bash", '{"cmd": "ls"}'),
            plain(1, "step/end", {"turn": 1, "step": 1}),
            tool_result(2, "a", "file.txt"),
            tool_result(3, "earlier", "from a call on the page before", error=True),
        ),
        str,
    )
    assert kinds(blocks) == ["tool", "meta", "tool"]
    call, _, alone = blocks
    assert call["input"] == '{\n  "cmd": "ls"\n}' and call["result"]["text"] == "file.txt"
    assert alone["name"] is None and alone["call_id"] == "earlier"
    assert alone["result"]["is_error"] is True


def test_chunks_before_their_message_are_dropped_and_orphans_are_one_partial() -> None:
    merged = transcript_blocks(events(chunk(0, "hel"), chunk(1, "lo"), assistant(2, "hello")), str)
    assert kinds(merged) == ["meta", "assistant"] and merged[1]["text"] == "hello"
    shown: list[str] = []

    def redact(text: str) -> str:
        shown.append(text)
        return text.upper()

    orphan = transcript_blocks(events(chunk(0, "hel"), chunk(1, "lo"), user(2, "stop")), redact)
    assert kinds(orphan) == ["meta", "partial", "user"]
    assert shown == ["hello"] and orphan[1]["text"] == "HELLO"  # redacted whole, once


def test_structural_events_are_summed_up_and_a_failed_turn_is_said() -> None:
    blocks = transcript_blocks(
        events(
            plain(0, "turn/start", {"turn": 1}),
            plain(1, "step/start", {"turn": 1, "step": 1}),
            plain(2, "plugin/open-event", {"x": 1}),
            plain(
                3,
                "turn/end",
                {"turn": 1, "reason": {"kind": "error", "error": {"message": "rate limited"}}},
            ),
        ),
        str,
    )
    assert blocks[0] == {
        "kind": "meta",
        "seq": 0,
        "time": blocks[0]["time"],
        "last": 2,
        "count": 3,
        "types": ["turn/start", "step/start", "plugin/open-event"],
    }
    assert blocks[1]["kind"] == "note" and blocks[1]["text"] == "Turn ended: error — rate limited"


def test_text_is_bounded_per_block() -> None:
    blocks = transcript_blocks(events(user(0, "y" * (MAX_TEXT + 5))), str)
    assert blocks[0]["text"].endswith("… 5 more characters (read the event)")


def test_odd_shapes_never_raise() -> None:
    odd = [
        plain(0, "assistant/message", {"message": {"content": "not a list"}}),
        plain(1, "assistant/message", None),
        plain(2, "tool/result", {"message": {"content": [1, 2]}}),
        plain(3, "assistant/chunk", {"chunk": {"type": "text-delta", "text": 5}}),
        plain(4, "turn/end", {"reason": "x"}),
        plain(5, "user/message", {"content": [{"type": "image"}], "source": "plugin"}),
    ]
    assert kinds(transcript_blocks(events(*odd), str)) == ["meta", "tool", "meta", "user"]
