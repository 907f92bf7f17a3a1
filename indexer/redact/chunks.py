"""Secrets streamed over chunk events: a model's text, reasoning or tool-call arguments
arrive as ``assistant/chunk`` deltas of a few characters each, so no delta holds a whole
secret and redacting each on its own finds nothing.

A *run* is the consecutive delta chunks of one block: the same turn, step, block index
and delta kind, between that block's ``block-start`` and ``block-end``. Its text is the
deltas joined; a secret found in it is taken out of every delta it overlaps: the delta
where it starts shows the marker, the others lose the covered characters. The deltas
joined again read as the redacted text of the whole run.

``redact_target`` applies this to one event read with its run around it: readers do,
for the target of ``session_event_read`` (neighbours show semantic text only, and chunks
have none). The writer does not: what a run holds depends on where a batch cuts it (a
watched file appends a live session's chunks a few at a time), and a stored event must
redact the same way whenever it is delivered; so in ``store`` mode the stored chunks keep
the pieces, none of which holds a whole secret (docs/security.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from indexer.model import SessionEvent
from indexer.model.event import dump_json
from indexer.redact.detect import marker
from indexer.redact.policy import Redaction, detector

__all__ = ["CONTEXT_EVENTS", "delta_of", "redact_target"]

CONTEXT_EVENTS: Final = 256
"""Events read on each side of a delta chunk to find its run (deltas are a few
characters: this is far more context than any rule needs)."""

_FIELDS: Final = {
    "text-delta": "text",
    "reasoning-delta": "text",
    "tool-call-delta": "argumentsDelta",
}
_BOUNDS: Final = frozenset({"block-start", "block-end"})


def _chunk(event: SessionEvent) -> dict[str, Any] | None:
    data = event.data
    if event.type != "assistant/chunk" or not isinstance(data, dict):
        return None
    chunk = data.get("chunk")
    return chunk if isinstance(chunk, dict) else None


def delta_of(event: SessionEvent) -> tuple[tuple[Any, ...], str] | None:
    """The run key and delta text of a delta chunk; None for any other event."""
    chunk = _chunk(event)
    if chunk is None:
        return None
    field = _FIELDS.get(str(chunk.get("type")))
    text = None if field is None else chunk.get(field)
    if not isinstance(text, str):
        return None
    data = event.data
    return (data.get("turn"), data.get("step"), chunk.get("index"), chunk.get("type")), text


def _ends_run(event: SessionEvent, key: tuple[Any, ...]) -> bool:
    chunk = _chunk(event)
    if chunk is None:
        return event.type != "assistant/chunk"
    return chunk.get("type") in _BOUNDS and chunk.get("index") == key[2]


def _run(events: Sequence[SessionEvent], at: int, key: tuple[Any, ...]) -> list[int]:
    """Indices of ``events`` in the run of ``events[at]`` (other chunks in between, such
    as usage, neither join nor end it)."""
    run = [at]
    for step in (-1, 1):
        i = at + step
        while 0 <= i < len(events) and not _ends_run(events[i], key):
            found = delta_of(events[i])
            if found is not None and found[0] == key:
                run.append(i)
            i += step
    return sorted(run)


def _pieces(texts: Sequence[str], redacted_spans: list[tuple[int, int, str]]) -> list[str]:
    """Each delta with the secrets' characters taken out (the marker where one starts)."""
    out: list[str] = []
    at = 0
    for text in texts:
        start, end = at, at + len(text)
        piece: list[str] = []
        pos = start
        for s, e, kind in redacted_spans:
            if e <= start or s >= end:
                continue
            piece.append(text[pos - start : max(s, start) - start])
            if s >= start:
                piece.append(marker(kind))
            pos = min(e, end)
        piece.append(text[pos - start :])
        out.append("".join(piece))
        at = end
    return out


def _with_delta(event: SessionEvent, text: str) -> SessionEvent:
    chunk = _chunk(event)
    assert chunk is not None
    field = _FIELDS[str(chunk["type"])]
    obj = {**event.obj, "data": {**event.data, "chunk": {**chunk, field: text}}}
    return SessionEvent(event.type, event.seq, event.time, obj, dump_json(obj))


def _redact_run(events: Sequence[SessionEvent], run: list[int]) -> dict[int, SessionEvent]:
    """The run's events whose delta changed, by index into ``events``."""
    texts = []
    for i in run:
        found = delta_of(events[i])
        assert found is not None
        texts.append(found[1])
    findings = detector().find("".join(texts))
    if not findings:
        return {}
    pieces = _pieces(texts, [(f.start, f.end, f.kind) for f in findings])
    return {
        i: _with_delta(events[i], piece)
        for i, text, piece in zip(run, texts, pieces, strict=True)
        if piece != text
    }


def redact_target(
    redaction: Redaction, target: SessionEvent, around: Sequence[SessionEvent]
) -> SessionEvent:
    """``target`` (a delta chunk among ``around``, which holds it) with what its run's
    secrets leave of its delta; any other event unchanged."""
    found = delta_of(target) if redaction.active else None
    if found is None:
        return target
    at = next(i for i, e in enumerate(around) if e.seq == target.seq)
    changed = _redact_run(around, _run(around, at, found[0]))
    return changed.get(at, target)
