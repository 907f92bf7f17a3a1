"""Semantic text extraction (SPEC §3, §12.9 items 164-165, deliberate difference 9)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from indexer.surface.text import block_texts, content_text, extract_text, join_text

MIXED_BLOCKS: list[dict[str, Any]] = [
    {"type": "text", "text": " visible "},
    {"type": "reasoning", "text": "thought"},
    {"type": "tool-call", "id": "call", "name": "read", "arguments": '{"path":"a"}'},
    {
        "type": "tool-result",
        "toolCallId": "call",
        "content": [{"type": "text", "text": "nested"}],
        "isError": False,
    },
    {"type": "future-content", "payload": "hidden"},
]
MIXED_TEXT = 'visible\nread\n{"path":"a"}\nnested'


def user_message(content: Any, source: Any = None) -> dict[str, Any]:
    return {
        "content": content,
        "source": source or {"kind": "user"},
        "role": "user",
        "id": "m1",
    }


def assistant_message(content: Any) -> dict[str, Any]:
    return {
        "turn": 1,
        "step": 1,
        "message": {
            "role": "assistant",
            "content": content,
            "source": {"kind": "model", "provider": "mock", "model": "mock"},
            "id": "a1",
        },
    }


def tool_result(content: Any, error: Any = None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "turn": 1,
        "step": 1,
        "message": {
            "source": {"kind": "tool", "callId": "call"},
            "content": [
                {"type": "tool-result", "toolCallId": "call", "content": content, "isError": True}
            ],
            "role": "user",
            "id": "r1",
        },
    }
    if error is not None:
        data["error"] = error
    return data


# ---- 164 -------------------------------------------------------------------------------------
def test_mixed_blocks_in_user_assistant_and_plugin_messages() -> None:
    assert extract_text("user/message", user_message(MIXED_BLOCKS)) == MIXED_TEXT
    assert extract_text("assistant/message", assistant_message(MIXED_BLOCKS)) == MIXED_TEXT
    plugin = user_message(MIXED_BLOCKS, {"kind": "plugin", "plugin": "test"})
    assert extract_text("user/message", plugin) == MIXED_TEXT


def test_reasoning_only_assistant_message_has_no_text() -> None:
    data = assistant_message([{"type": "reasoning", "text": "private thought"}])
    assert extract_text("assistant/message", data) == ""


def test_tool_call_is_name_then_arguments() -> None:
    data = {"turn": 1, "step": 1, "callId": "call", "name": "bash", "arguments": '{"cmd":"pwd"}'}
    assert extract_text("tool/call", data) == 'bash\n{"cmd":"pwd"}'


def test_failing_tool_result_appends_error_name_and_code() -> None:
    data = tool_result([{"type": "text", "text": "failed"}], {"name": "Oops", "code": "E_OOPS"})
    assert extract_text("tool/result", data) == "failed\nOops\nE_OOPS"


def test_empty_successful_tool_result_has_no_text() -> None:
    assert extract_text("tool/result", tool_result([])) == ""


def test_todo_write_is_status_then_content_per_todo() -> None:
    data = {"todos": [{"status": "in_progress", "content": "ship search"}]}
    assert extract_text("todo/write", data) == "in_progress\nship search"
    two = {
        "todos": [
            {"content": "a", "status": "completed"},
            {"content": " b ", "status": "pending"},
        ]
    }
    assert extract_text("todo/write", two) == "completed\na\npending\nb"


# ---- 165 -------------------------------------------------------------------------------------
def turn_end(reason: Any) -> dict[str, Any]:
    return {"turn": 1, "reason": reason}


def test_turn_end_reasons() -> None:
    cases: list[tuple[Any, str]] = [
        ({"kind": "error", "error": {"message": "boom", "code": "E"}}, "error\nboom"),
        ({"kind": "error", "error": "provider boom"}, "error\nprovider boom"),
        ({"kind": "aborted", "reason": {"kind": "user"}}, "aborted"),
        ({"kind": "aborted", "reason": {"kind": "disposed"}}, "aborted"),
        ({"kind": "max-tokens"}, "max-tokens"),
        ({"kind": "interrupted"}, "interrupted"),
        ({"kind": "completed"}, ""),
        ({"kind": "blocked"}, ""),
        ({"kind": "future-status"}, ""),
    ]
    for reason, text in cases:
        assert extract_text("turn/end", turn_end(reason)) == text, reason


def test_structural_and_unknown_types_have_no_text() -> None:
    structural: list[tuple[str, Any]] = [
        ("turn/start", {"turn": 1}),
        ("step/start", {"turn": 1, "step": 1}),
        ("step/end", {"turn": 1, "step": 1}),
        (
            "assistant/chunk",
            {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "raw"}},
        ),
        ("request/header", {"header": {"config": {"provider": "t", "model": "t"}}, "reason": "x"}),
        ("future/event", {"text": "hidden"}),
        ("session/title", {"title": "t", "messageSeqs": [], "source": {"kind": "user"}}),
        ("request/context", {"provider": "p", "model": "m"}),
        ("session/end-seed", {}),
        ("context/message", user_message([{"type": "text", "text": "hidden"}])),
    ]
    assert [extract_text(t, d) for t, d in structural] == [""] * len(structural)


# ---- §3 helpers and the 166 document texts -----------------------------------------------------
def test_join_trims_with_js_whitespace_and_drops_empties() -> None:
    assert join_text([" a ", "", "\u3000", "b\u0085"]) == "a\nb\u0085"
    assert join_text([]) == ""


def test_nested_tool_results_recurse_in_order() -> None:
    blocks = [
        {
            "type": "tool-result",
            "content": [
                {"type": "text", "text": "one"},
                {"type": "tool-result", "content": [{"type": "text", "text": "two"}]},
                {"type": "tool-call", "name": "n", "arguments": "{}"},
            ],
        },
        {"type": "text", "text": "three"},
    ]
    assert block_texts(blocks) == ["one", "two", "n", "{}", "three"]
    assert content_text(blocks) == "one\ntwo\nn\n{}\nthree"


def test_deeply_nested_tool_results_do_not_exhaust_the_stack() -> None:
    block: dict[str, Any] = {"type": "text", "text": "deep"}
    for _ in range(5000):
        block = {"type": "tool-result", "content": [block]}
    assert content_text([block]) == "deep"


def test_multiline_text_keeps_inner_newlines() -> None:
    data = user_message([{"type": "text", "text": "Hello\n(AI)+"}])
    assert extract_text("user/message", data) == "Hello\n(AI)+"


# ---- deliberate difference 9: older shapes -------------------------------------------------------
def test_older_assistant_message_reads_data_content() -> None:
    data = {
        "turn": 1,
        "step": 1,
        "content": [
            {"type": "reasoning", "text": "hidden"},
            {"type": "tool-call", "id": "c", "name": "cordis_inspect", "arguments": '{"w": 1}'},
        ],
        "provenance": {"provider": "deepseek-official", "model": "deepseek-v4-flash"},
        "usage": {"inputTokens": 1, "outputTokens": 2},
    }
    assert extract_text("assistant/message", data) == 'cordis_inspect\n{"w": 1}'


def test_older_tool_result_reads_text_blocks_from_data_content() -> None:
    data = {
        "turn": 1,
        "step": 1,
        "callId": "call_00",
        "content": [{"type": "text", "text": "## Temporary Plugins\nNone running."}],
        "isError": False,
    }
    assert extract_text("tool/result", data) == "## Temporary Plugins\nNone running."


def test_older_tool_result_with_tool_result_blocks_in_data_content() -> None:
    data = {
        "turn": 1,
        "step": 1,
        "callId": "c",
        "content": [{"type": "tool-result", "content": [{"type": "text", "text": "out"}]}],
        "error": {"name": "E", "code": "C"},
    }
    assert extract_text("tool/result", data) == "out\nE\nC"


def test_present_message_wins_over_data_content() -> None:
    data = assistant_message([{"type": "text", "text": "new"}])
    data["content"] = [{"type": "text", "text": "old"}]
    assert extract_text("assistant/message", data) == "new"
    data["message"] = None
    assert extract_text("assistant/message", data) == ""


def test_older_user_message_without_role_or_id() -> None:
    data = {"content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}}
    assert extract_text("user/message", data) == "hi"


# ---- robustness --------------------------------------------------------------------------------
def test_malformed_fields_contribute_nothing() -> None:
    assert extract_text("user/message", None) == ""
    assert extract_text("user/message", {"content": "text"}) == ""
    assert extract_text("user/message", {"content": [1, None, "x", {"type": "text"}]}) == ""
    assert extract_text("user/message", {"content": [{"type": "text", "text": 5}]}) == ""
    assert extract_text("tool/call", {"name": 1, "arguments": "args"}) == "args"
    assert extract_text("tool/result", {"message": {"content": 3}, "error": "x"}) == ""
    assert extract_text("tool/result", {"message": [], "error": {"name": None, "code": 7}}) == ""
    assert extract_text("todo/write", {"todos": [None, {"status": 1, "content": "c"}]}) == "c"
    assert extract_text("todo/write", {"todos": {"status": "x"}}) == ""
    assert extract_text("turn/end", {"reason": "error"}) == ""
    assert extract_text("turn/end", {"reason": {"kind": "error"}}) == "error"
    assert extract_text("turn/end", {"reason": {"kind": "error", "error": {"message": 3}}}) == (
        "error"
    )
    assert extract_text("turn/end", {"reason": {"kind": ["error"]}}) == ""


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=30,
)
shaped = st.fixed_dictionaries(
    {},
    optional={
        "content": json_values,
        "message": json_values | st.fixed_dictionaries({}, optional={"content": json_values}),
        "error": json_values,
        "name": json_values,
        "arguments": json_values,
        "todos": json_values,
        "reason": json_values,
    },
)
TYPES = ["user/message", "assistant/message", "tool/call", "tool/result", "todo/write",
         "turn/end", "turn/start", "x/y"]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(TYPES), json_values | shaped)
def test_extract_never_raises_and_returns_a_string(event_type: str, data: Any) -> None:
    assert isinstance(extract_text(event_type, data), str)
