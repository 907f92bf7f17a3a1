"""A whole-document chat (Gemini CLI's ``.json``) read as a stream: its members first,
then its messages one at a time, with JavaScript's reading of what ``JSON.parse`` takes
and yajl does not (a lone surrogate escape, an integer beyond 64 bits)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from indexer.errors import LogValidationError
from indexer.logs.importers.documents import MEMBER_EVENTS, SNIFF_EVENTS, members, open_document
from indexer.logs.importers.gemini import read_gemini


def _chat(path: Path, messages: list[dict[str, object]], **extra: object) -> Path:
    doc = {"sessionId": "g1", "projectHash": "0" * 64, "startTime": "2025-11-10T10:00:00Z"}
    path.write_text(json.dumps({**doc, "messages": messages, **extra}, indent=2))
    return path


def test_members_come_whole_wherever_they_stand_and_messages_one_by_one(tmp_path: Path) -> None:
    msgs = [{"id": f"m{i}", "type": "user", "content": f"hello {i}"} for i in range(3)]
    path = _chat(tmp_path / "chat.json", msgs, summary="after the messages", kind="main")
    doc = open_document(path, "messages")
    assert doc.members["summary"] == "after the messages" and doc.members["kind"] == "main"
    assert doc.members["messages"] == []  # never built
    items = list(doc.items())
    assert [m for m, _ in items] == msgs
    assert [at for _, at in items] == sorted(at for _, at in items)


def test_a_lone_surrogate_and_a_huge_integer_are_read_as_javascript_reads_them(
    tmp_path: Path,
) -> None:
    path = tmp_path / "chat.json"
    path.write_text(
        '{"sessionId": "g1", "projectHash": "x", "startTime": "2025-11-10T10:00:00Z",'
        ' "n": 123456789012345678901234567890,'
        ' "messages": [{"id": "m0", "type": "user", "content": "cut \\ud83d here"}]}'
    )
    doc = open_document(path, "messages")
    assert [m["content"] for m, _ in doc.items()] == ["cut \ud83d here"]
    log = read_gemini(path)
    assert any(b"cut \\ud83d here" in e.raw for e in log.events)


def test_a_sniff_reads_only_a_documents_head(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"sessionId": "s", "data": list(range(3 * SNIFF_EVENTS))}))
    assert members(path, "messages", stop=True) == {"sessionId": "s"}


def test_a_member_too_large_to_be_metadata_is_refused(tmp_path: Path) -> None:
    path = _chat(tmp_path / "chat.json", [], extra=list(range(MEMBER_EVENTS + 1)))
    with pytest.raises(LogValidationError, match="document member 'extra' is too large"):
        open_document(path, "messages")
