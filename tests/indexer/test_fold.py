"""The surface fold and log validity (SPEC §2, §12.8 items 152-163, §12.9 items 166, 169)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from indexer.model import SessionEvent
from indexer.surface.fold import FoldStep, FoldViolation, SurfaceFold, classify, fold, json_equal
from indexer.surface.text import extract_text

MISSING: Any = object()


def ev(
    seq: int,
    etype: str,
    data: Any = MISSING,
    *,
    op: Any = MISSING,
    sources: Any = MISSING,
) -> SessionEvent:
    """An event with the live key order: type, seq, time, data, sourceEventSeqs?, surfaceOp?."""
    obj: dict[str, Any] = {
        "type": etype,
        "seq": seq,
        "time": seq + 1,
        "data": {} if data is MISSING else data,
    }
    if sources is not MISSING:
        obj["sourceEventSeqs"] = sources
    if op is not MISSING:
        obj["surfaceOp"] = op
    return SessionEvent.from_obj(obj)


def replace(start: int, end: int) -> dict[str, Any]:
    return {"op": "replace", "start": start, "end": end}


def user(seq: int, text: str = "", *, op: Any = "append", sources: Any = MISSING) -> SessionEvent:
    data = {
        "content": [{"type": "text", "text": text or f"event {seq}"}],
        "source": {"kind": "user"},
    }
    return ev(seq, "user/message", data, op=op, sources=sources)


def assistant(seq: int, text: str, *, op: Any = "append", sources: Any = MISSING) -> SessionEvent:
    data = {
        "turn": 1,
        "step": 1,
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "source": {"kind": "model", "provider": "mock", "model": "mock"},
            "id": f"a{seq}",
        },
    }
    return ev(seq, "assistant/message", data, op=op, sources=sources)


def chunk(seq: int) -> SessionEvent:
    data = {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "draft"}}
    return ev(seq, "assistant/chunk", data)


def result_data(text: str, *, is_error: bool = False, **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "turn": 1,
        "step": 1,
        "message": {
            "source": {"kind": "tool", "callId": "call"},
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": "call",
                    "content": [{"type": "text", "text": text}],
                    "isError": is_error,
                }
            ],
            "role": "user",
            "id": "r1",
        },
    }
    data.update(extra)
    return data


def violation(events: list[SessionEvent]) -> str:
    with pytest.raises(FoldViolation) as info:
        fold(events)
    return info.value.message


# ---- §2.3 worked example ------------------------------------------------------------------------
def worked_example() -> list[SessionEvent]:
    return [
        ev(0, "turn/start", {"turn": 1}),
        ev(1, "step/start", {"turn": 1, "step": 1}),
        chunk(2),
        user(3, "original", sources=[2]),
        assistant(4, "summary one", op=replace(3, 3), sources=[3, 2]),
        user(5),
        ev(6, "step/end", {"turn": 1, "step": 1}),
        ev(7, "step/start", {"turn": 1, "step": 2}),
        assistant(8, "summary two", op=replace(4, 4), sources=[2, 4]),
    ]


def test_worked_example_final_surface_and_replacements() -> None:
    result = fold(worked_example())
    assert result.nodes == [8, 5]
    assert [(r.seq, r.start, r.end, r.shadowed) for r in result.replacements] == [
        (4, 3, 3, (3,)),
        (8, 4, 4, (4,)),
    ]


def test_worked_example_classification() -> None:
    assert classify(worked_example()) == [
        "log-only", "log-only", "log-only", "shadowed", "shadowed",
        "current", "log-only", "log-only", "current",
    ]


def test_worked_example_steps_one_by_one() -> None:
    events = worked_example()
    state = SurfaceFold()
    steps = [state.step(e, events.__getitem__) for e in events]
    nodes_after: list[list[int]] = []
    state = SurfaceFold()
    for e in events:
        state.step(e, events.__getitem__)
        nodes_after.append(list(state.nodes))
    assert nodes_after == [[], [], [], [3], [4], [4, 5], [4, 5], [4, 5], [8, 5]]
    assert steps[0] == FoldStep(0, "log-only")
    assert steps[3] == FoldStep(3, "append", sources=(2,))
    assert steps[4] == FoldStep(4, "replace", (3,), 3, 3, (3, 2))
    assert steps[5] == FoldStep(5, "append", sources=None)
    assert steps[8] == FoldStep(8, "replace", (4,), 4, 4, (2, 4))
    assert state.next_seq == 9


def test_fold_continues_incrementally_from_stored_state() -> None:
    events = worked_example()
    first = SurfaceFold()
    for e in events[:5]:
        first.step(e, events.__getitem__)
    resumed = SurfaceFold(nodes=first.nodes, next_seq=first.next_seq)
    for e in events[5:]:
        resumed.step(e, events.__getitem__)
    assert resumed.nodes == fold(events).nodes
    assert resumed.next_seq == 9


def test_compaction_surface_of_read_surface_example() -> None:
    events = [
        user(0, "old"),
        chunk(1),
        user(2, "compacted", op=replace(0, 0), sources=[0]),
        user(3, "retained tail"),
        user(4, "summary", op=replace(2, 3), sources=[2, 3]),
        assistant(5, "answer"),
    ]
    assert fold(events).nodes == [4, 5]
    assert classify(events) == ["shadowed", "log-only", "shadowed", "shadowed", "current",
                                "current"]


def test_replacement_range_is_taken_in_surface_order() -> None:
    events = [
        user(0),
        user(1),
        user(2, op=replace(0, 0), sources=[0]),
        user(3, op=replace(2, 1), sources=[2, 1]),
    ]
    result = fold(events)
    assert result.nodes == [3]
    assert result.replacements[1].shadowed == (2, 1)


# ---- §2.3 other examples -------------------------------------------------------------------------
def test_replace_must_cite_every_shadowed_node() -> None:
    events = [user(0), user(1), user(2, op=replace(0, 1), sources=[0])]
    assert violation(events) == (
        "surface replace: sourceEventSeqs must include every shadowed surface node; missing 1"
    )


def test_missing_list_is_comma_separated_in_surface_order() -> None:
    events = [user(0), user(1), user(2), assistant(3, "s", op=replace(0, 2), sources=[1])]
    assert violation(events) == (
        "surface replace: sourceEventSeqs must include every shadowed surface node; missing 0, 2"
    )


def test_tool_result_cannot_replace_a_user_message() -> None:
    events = [user(0), ev(1, "tool/result", result_data("x"), op=replace(0, 0), sources=[0])]
    assert violation(events) == "tool/result surface replacement must target a current tool/result"


# ---- §12.8 items 152-163 -------------------------------------------------------------------------
def test_152_replace_of_an_unknown_node() -> None:
    events = [user(0), assistant(1, "", op=replace(9, 9), sources=[])]
    assert violation(events) == "surface replace: start seq 9 not found in surface"


def test_153_non_surface_event_with_sources() -> None:
    events = [ev(0, "turn/start", {"turn": 1}, sources=[0])]
    assert violation(events) == (
        'session event "turn/start" is not surface-eligible and cannot carry sourceEventSeqs'
    )


def test_154_sources_not_an_array() -> None:
    assert violation([user(0, sources="invalid")]) == (
        "sourceEventSeqs on event at seq 0 must be an array when present"
    )


def test_155_empty_sources_on_a_user_message() -> None:
    assert violation([user(0, sources=[])]) == (
        "sourceEventSeqs must not be empty except on assistant/message"
    )


def test_156_sparse_sources() -> None:
    assert violation([user(0, sources=[None])]) == (
        'session event "user/message" sourceEventSeqs must densely contain non-negative safe '
        "integers"
    )


def test_157_duplicate_sources() -> None:
    assert violation([user(0), user(1, sources=[0, 0])]) == (
        "sourceEventSeqs must not contain duplicates"
    )


def test_158_negative_source() -> None:
    assert violation([user(0), user(1, sources=[-1])]) == (
        'session event "user/message" sourceEventSeqs must densely contain non-negative safe '
        "integers"
    )


def test_159_future_source() -> None:
    assert violation([user(0, sources=[1]), user(1)]) == (
        "sourceEventSeqs must reference earlier events: 1 >= current seq 0"
    )


def test_160_replace_without_sources() -> None:
    assert violation([user(0), user(1, op=replace(0, 0))]) == (
        "surface replace: sourceEventSeqs must include every shadowed surface node; missing 0"
    )


def test_161_replace_citing_only_a_chunk() -> None:
    events = [chunk(0), user(1), user(2, op=replace(1, 1), sources=[0])]
    assert violation(events) == (
        "surface replace: sourceEventSeqs must include every shadowed surface node; missing 1"
    )


def test_162_non_surface_event_with_surface_op() -> None:
    assert violation([ev(0, "turn/start", {"turn": 1}, op="append")]) == (
        'session event "turn/start" is not surface-eligible and cannot carry surfaceOp'
    )


def test_163_classification_applies_the_same_validation() -> None:
    with pytest.raises(FoldViolation, match="must not contain duplicates"):
        classify([user(0), user(1, sources=[0, 0])])


# ---- §2.1 rule by rule ---------------------------------------------------------------------------
def test_contiguity_is_checked_first() -> None:
    assert violation([ev(1, "turn/start", op="append")]) == (
        "session event seq 1 is not contiguous; expected 0"
    )
    assert violation([user(0), user(0)]) == "session event seq 0 is not contiguous; expected 1"


def test_present_means_present_even_when_null() -> None:
    assert violation([ev(0, "step/end", op=None)]) == (
        'session event "step/end" is not surface-eligible and cannot carry surfaceOp'
    )
    assert violation([ev(0, "step/end", sources=None)]) == (
        'session event "step/end" is not surface-eligible and cannot carry sourceEventSeqs'
    )
    assert violation([user(0, sources=None)]) == (
        "sourceEventSeqs on event at seq 0 must be an array when present"
    )


def test_surface_op_is_reported_before_sources_on_log_only_events() -> None:
    assert violation([ev(0, "x/y", op="append", sources=[1])]) == (
        'session event "x/y" is not surface-eligible and cannot carry surfaceOp'
    )


def test_eligible_event_requires_a_marker() -> None:
    for etype in ("user/message", "assistant/message", "tool/result"):
        assert violation([ev(0, etype)]) == (
            f'session event "{etype}" is surface-eligible and requires a surfaceOp marker'
        )


@pytest.mark.parametrize("op", [None, "prepend", "", [], ["append"], 5, True])
def test_invalid_surface_op(op: Any) -> None:
    assert violation([user(0, op=op)]) == (
        'session event "user/message" carries an invalid surfaceOp'
    )


@pytest.mark.parametrize(
    "op",
    [
        {},
        {"op": "replace", "start": 0},
        {"op": "replace", "start": 0, "end": 0, "extra": 1},
        {"op": "Replace", "start": 0, "end": 0},
        {"op": "append", "start": 0, "end": 0},
        {"op": "replace", "start": -1, "end": 0},
        {"op": "replace", "start": 0.5, "end": 0},
        {"op": "replace", "start": True, "end": 0},
        {"op": "replace", "start": "0", "end": 0},
        {"op": "replace", "start": 0, "end": 9007199254740992},
        {"op": "replace", "start": 0, "end": None},
        {"op": "replace", "begin": 0, "end": 0},
    ],
)
def test_invalid_replace_surface_op(op: Any) -> None:
    assert violation([user(0), user(1, op=op, sources=[0])]) == (
        'session event "user/message" carries an invalid replace surfaceOp'
    )


def test_integral_floats_are_integers() -> None:
    events = [user(0), user(1, op={"op": "replace", "start": 0.0, "end": 0}, sources=[0.0])]
    result = fold(events)
    assert result.nodes == [1]
    assert result.replacements[0].sources == (0,)
    assert result.replacements[0].start == 0 and isinstance(result.replacements[0].start, int)


def test_replace_range_errors() -> None:
    assert violation([user(0), user(1, op=replace(0, 5), sources=[0])]) == (
        "surface replace: end seq 5 not found in surface"
    )
    assert violation([user(0), user(1), user(2, op=replace(1, 0), sources=[0, 1])]) == (
        "surface replace: start seq 1 (index 1) is after end seq 0 (index 0)"
    )


def test_range_is_checked_before_provenance() -> None:
    assert violation([user(0), user(1, op=replace(7, 7), sources="bad")]) == (
        "surface replace: start seq 7 not found in surface"
    )


def test_provenance_rules_in_order() -> None:
    # A bad element is reported before duplicates and future references.
    assert violation([user(0), user(1, sources=[0, 0, 5, "x"])]) == (
        'session event "user/message" sourceEventSeqs must densely contain non-negative safe '
        "integers"
    )
    # Duplicates are reported before future references.
    assert violation([user(0), user(1, sources=[3, 3])]) == (
        "sourceEventSeqs must not contain duplicates"
    )
    # The first offending value is named.
    assert violation([user(0), user(1), user(2, sources=[0, 4, 2])]) == (
        "sourceEventSeqs must reference earlier events: 4 >= current seq 2"
    )
    # Self reference.
    assert violation([user(0), user(1, sources=[1])]) == (
        "sourceEventSeqs must reference earlier events: 1 >= current seq 1"
    )
    # Fractions, booleans and unsafe integers are not seqs.
    for bad in (0.5, True, 9007199254740992):
        assert "densely contain" in violation([user(0), user(1, sources=[bad])])


def test_empty_sources_are_allowed_on_assistant_messages() -> None:
    step = SurfaceFold().step(assistant(0, "a", sources=[]), lambda s: pytest.fail("unused"))
    assert step == FoldStep(0, "append", sources=())


def test_sources_may_cite_log_only_events_and_are_optional_on_append() -> None:
    events = [chunk(0), user(1, sources=[0]), user(2)]
    assert fold(events).nodes == [1, 2]


# ---- tool/result rewrite rule --------------------------------------------------------------------
def tool_pair(original: dict[str, Any], rewritten: dict[str, Any]) -> list[SessionEvent]:
    return [
        ev(0, "tool/result", original, op="append"),
        ev(1, "tool/result", rewritten, op=replace(0, 0), sources=[0]),
    ]


def test_tool_result_may_rewrite_only_its_content() -> None:
    assert fold(tool_pair(result_data("long output"), result_data("[spilled]"))).nodes == [1]


def test_tool_result_rewrite_ignores_key_order_and_number_representation() -> None:
    original = result_data("a", meta={"x": 1, "y": [1, 2]})
    rewritten = result_data("b", meta={"y": [1.0, 2], "x": 1.0})
    rewritten = dict(reversed(list(rewritten.items())))
    assert fold(tool_pair(original, rewritten)).nodes == [1]


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["message"]["content"][0].update(isError=True),
        lambda d: d["message"]["content"][0].update(toolCallId="other"),
        lambda d: d["message"]["content"][0].update(type="text"),
        lambda d: d["message"].update(id="r2"),
        lambda d: d["message"]["source"].update(callId="other"),
        lambda d: d.update(turn=True),
        lambda d: d.update(step=2),
        lambda d: d.update(error={"name": "E", "code": "C"}),
        lambda d: d.update(meta=None),
        lambda d: d["message"].pop("role"),
    ],
)
def test_tool_result_rewrite_rejects_any_other_change(change: Any) -> None:
    rewritten = result_data("b")
    change(rewritten)
    assert violation(tool_pair(result_data("a"), rewritten)) == (
        "tool/result surface replacement may change only content"
    )


def test_tool_result_rewrite_compares_only_the_first_block() -> None:
    original = result_data("a")
    rewritten = copy.deepcopy(original)
    rewritten["message"]["content"].append({"type": "tool-result", "content": [], "isError": 1})
    assert fold(tool_pair(original, rewritten)).nodes == [1]


def test_tool_result_rewrite_must_shadow_exactly_one_node() -> None:
    events = [
        ev(0, "tool/result", result_data("a"), op="append"),
        ev(1, "tool/result", result_data("b"), op="append"),
        ev(2, "tool/result", result_data("c"), op=replace(0, 1), sources=[0, 1]),
    ]
    assert violation(events) == (
        "tool/result surface replacement must rewrite exactly one current node"
    )


def test_provenance_is_checked_before_the_rewrite_rule() -> None:
    events = [user(0), ev(1, "tool/result", result_data("x"), op=replace(0, 0))]
    assert violation(events) == (
        "surface replace: sourceEventSeqs must include every shadowed surface node; missing 0"
    )


def test_older_tool_result_shape_rewrites_content_only() -> None:
    def old(text: str, call_id: str = "call_00") -> dict[str, Any]:
        return {
            "turn": 1,
            "step": 1,
            "callId": call_id,
            "content": [{"type": "text", "text": text}],
            "isError": False,
        }

    assert fold(tool_pair(old("long"), old("short"))).nodes == [1]
    assert violation(tool_pair(old("a"), old("b", "other"))) == (
        "tool/result surface replacement may change only content"
    )
    assert violation(tool_pair(old("a"), result_data("a"))) == (
        "tool/result surface replacement may change only content"
    )


def test_event_at_is_only_consulted_for_tool_result_replacements() -> None:
    events = worked_example()
    state = SurfaceFold()
    for event in events:
        state.step(event, lambda seq: pytest.fail(f"event_at({seq}) called"))
    assert state.nodes == [8, 5]


# ---- atomicity -----------------------------------------------------------------------------------
def test_a_violation_leaves_the_state_unchanged() -> None:
    tool_event = ev(2, "tool/result", result_data("x"), op=replace(0, 1), sources=[0, 1])
    events = [user(0), user(1), tool_event]
    state = SurfaceFold()
    state.step(events[0], events.__getitem__)
    state.step(events[1], events.__getitem__)
    with pytest.raises(FoldViolation):
        state.step(tool_event, events.__getitem__)
    assert (state.nodes, state.next_seq) == ([0, 1], 2)
    with pytest.raises(FoldViolation):
        state.step(user(3), events.__getitem__)
    assert (state.nodes, state.next_seq) == ([0, 1], 2)
    state.step(user(2, op=replace(0, 1), sources=[1, 0]), events.__getitem__)
    assert (state.nodes, state.next_seq) == ([2], 3)


def test_violation_is_a_log_validation_error_with_the_surface_code() -> None:
    with pytest.raises(FoldViolation) as info:
        fold([user(1)])
    assert info.value.code == "SESSION_QUERY_INVALID_SURFACE"
    assert str(info.value) == "session event seq 1 is not contiguous; expected 0"


# ---- §12.9 item 166: records and documents of the §3 example ---------------------------------
def test_records_and_documents_of_the_four_event_log() -> None:
    events = [
        user(0, "Hello\n(AI)+"),
        chunk(1),
        assistant(2, "replacement", op=replace(0, 0), sources=[0]),
        ev(3, "turn/end", {"turn": 1, "step": 1, "reason": {"kind": "interrupted"}}),
    ]
    surfaces = classify(events)
    assert surfaces == ["shadowed", "log-only", "current", "log-only"]
    documents = [
        (e.seq, text, surface)
        for e, surface in zip(events, surfaces, strict=True)
        if (text := extract_text(e.type, e.data))
    ]
    assert documents == [
        (0, "Hello\n(AI)+", "shadowed"),
        (2, "replacement", "current"),
        (3, "interrupted", "log-only"),
    ]


def test_169_replace_of_unknown_node_fails_record_building() -> None:
    with pytest.raises(FoldViolation, match="start seq 9 not found"):
        classify([assistant(0, "bad", op=replace(9, 9))])


def test_unknown_types_are_log_only() -> None:
    assert classify([ev(0, "plugin/open-event", {"x": 1}), ev(1, "context/message")]) == [
        "log-only",
        "log-only",
    ]


# ---- JSON deep equality ------------------------------------------------------------------------
def test_json_equal() -> None:
    assert json_equal({"a": [1, {"b": None}]}, {"a": [1.0, {"b": None}]})
    assert json_equal({"a": 1, "b": 2}, {"b": 2, "a": 1})
    assert not json_equal(True, 1)
    assert not json_equal(1, True)
    assert not json_equal(False, 0)
    assert not json_equal(0, None)
    assert not json_equal("1", 1)
    assert not json_equal([1], [1, 1])
    assert not json_equal({"a": 1}, {"a": 1, "b": None})
    assert not json_equal({"a": 1}, {"b": 1})
    assert not json_equal([], {})
    assert json_equal(True, True) and json_equal(None, None) and json_equal("", "")

def test_json_equal_handles_deep_nesting_without_recursion() -> None:
    left: Any = 0
    right: Any = 0.0
    for _ in range(10000):
        left, right = [left], [right]
    assert json_equal(left, right)
    assert not json_equal(left, [[0]])
