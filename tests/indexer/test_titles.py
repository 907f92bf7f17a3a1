"""The title fold of one ``session/title`` event (SPEC §4)."""

from __future__ import annotations

from typing import Any

import pytest

from indexer.errors import SessionqError
from indexer.model import SessionEvent
from indexer.surface.titles import TitleMalformedError, TitleSnapshot, fold_title


def title_event(data: Any, seq: int = 7, time: int = 1234) -> SessionEvent:
    return SessionEvent.from_obj({"type": "session/title", "seq": seq, "time": time, "data": data})


def test_fallback_title_snapshot() -> None:
    data = {"title": "Use only Cordis tools.", "messageSeqs": [1], "source": {"kind": "fallback"}}
    assert fold_title(title_event(data)) == TitleSnapshot(
        title="Use only Cordis tools.",
        message_seqs=[1],
        source={"kind": "fallback"},
        event_seq=7,
        updated_at=1234,
    )


def test_provider_title_copies_provider_and_model_only() -> None:
    source = {
        "kind": "provider",
        "provider": "first-message-llm",
        "model": {"provider": "deepseek", "model": "v4", "extra": 1},
        "extra": True,
    }
    snap = fold_title(title_event({"title": "T", "messageSeqs": [1, 3], "source": source}))
    assert snap.source == {
        "kind": "provider",
        "provider": "first-message-llm",
        "model": {"provider": "deepseek", "model": "v4"},
    }
    assert snap.message_seqs == [1, 3]
    bare = fold_title(title_event({"title": "T", "messageSeqs": [1], "source": {
        "kind": "provider", "provider": "p"}}))
    assert bare.source == {"kind": "provider", "provider": "p"}


def test_user_title_with_no_message_seqs_and_empty_title_is_valid() -> None:
    snap = fold_title(title_event({"title": "", "messageSeqs": [], "source": {"kind": "user"}}))
    assert (snap.title, snap.message_seqs, snap.source) == ("", [], {"kind": "user"})


def test_title_is_kept_verbatim() -> None:
    data = {"title": "  spaced\ttitle  ", "messageSeqs": [0], "source": {"kind": "fallback"}}
    assert fold_title(title_event(data)).title == "  spaced\ttitle  "


def test_snapshot_is_detached_from_the_event() -> None:
    seqs = [1, 2]
    source = {"kind": "provider", "provider": "p", "model": {"provider": "a", "model": "b"}}
    snap = fold_title(title_event({"title": "t", "messageSeqs": seqs, "source": source}))
    seqs.append(3)
    source["model"]["model"] = "changed"  # type: ignore[index]
    assert snap.message_seqs == [1, 2]
    assert snap.source["model"] == {"provider": "a", "model": "b"}


def test_integral_float_seqs_read_as_ints() -> None:
    snap = fold_title(title_event({"title": "t", "messageSeqs": [2.0], "source": {
        "kind": "fallback"}}))
    assert snap.message_seqs == [2] and isinstance(snap.message_seqs[0], int)


@pytest.mark.parametrize(
    "data",
    [
        None,
        [],
        "title",
        {"messageSeqs": [1], "source": {"kind": "fallback"}},
        {"title": 5, "messageSeqs": [1], "source": {"kind": "fallback"}},
        {"title": "t", "source": {"kind": "fallback"}},
        {"title": "t", "messageSeqs": None, "source": {"kind": "fallback"}},
        {"title": "t", "messageSeqs": "1", "source": {"kind": "fallback"}},
        {"title": "t", "messageSeqs": [1.5], "source": {"kind": "fallback"}},
        {"title": "t", "messageSeqs": [True], "source": {"kind": "fallback"}},
        {"title": "t", "messageSeqs": [1]},
        {"title": "t", "messageSeqs": [1], "source": "fallback"},
        {"title": "t", "messageSeqs": [1], "source": {"kind": "llm"}},
        {"title": "t", "messageSeqs": [1], "source": {}},
        {"title": "t", "messageSeqs": [1], "source": {"kind": "provider"}},
        {"title": "t", "messageSeqs": [1], "source": {"kind": "provider", "provider": 1}},
        {"title": "t", "messageSeqs": [1], "source": {
            "kind": "provider", "provider": "p", "model": None}},
        {"title": "t", "messageSeqs": [1], "source": {
            "kind": "provider", "provider": "p", "model": {"provider": "a"}}},
    ],
)
def test_malformed_payloads_raise_title_malformed(data: Any) -> None:
    with pytest.raises(TitleMalformedError) as info:
        fold_title(title_event(data))
    assert isinstance(info.value, SessionqError)
    assert info.value.code == "SESSION_QUERY_TOOL_FAILED"


def test_only_title_events_can_be_folded() -> None:
    event = SessionEvent.from_obj({"type": "user/message", "seq": 0, "time": 0, "data": {}})
    with pytest.raises(ValueError):
        fold_title(event)
