"""Secrets streamed over chunk events: a model's text, reasoning or tool-call arguments
arrive as ``assistant/chunk`` deltas of a few characters each, so no delta holds a whole
secret and redacting each on its own finds nothing.

A *run* is the consecutive delta chunks of one block: the same turn, step, block index
and delta kind, between that block's ``block-start`` and ``block-end`` (other chunks in
between, such as usage, neither join nor end it; any other event ends it). Its text is
the deltas joined; a secret found in it is taken out of every delta it overlaps: the
delta where it starts shows the marker, the others lose the covered characters, so the
deltas joined again read as the redacted text of the run.

``redact_target`` applies this to one event, reading the stored events around it:
readers do, for the target of ``session_event_read`` (neighbours show semantic text only,
and chunks have none). The writer does not: what a run holds depends on where a batch cuts
it (a watched file appends a live session's chunks a few at a time), and a stored event
must redact the same way whenever it is delivered; so in ``store`` mode the stored chunks
keep the pieces, none of which holds a whole secret (docs/security.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from indexer.model import SessionEvent
from indexer.model.event import dump_json, load_json
from indexer.redact.detect import marker
from indexer.redact.policy import Redaction, detector

__all__ = ["CONTEXT_EVENTS", "Around", "Stored", "delta_of", "redact_target"]

CONTEXT_EVENTS: Final = 64
"""Stored events read on each side of a delta chunk to find its run: deltas are a few
characters, so this is a few hundred characters of context on each side (a longer
secret, a private key's body, is found only where its start is that near)."""
CONTEXT_STEPS: Final = (16, CONTEXT_EVENTS - 16)
"""How many of them each read takes, outward from the target (``_side``)."""

Stored = tuple[int, str, bytes, "list[bytes] | None"]
"""Stored events as ``redact_target`` reads them: the first one's seq, their type, the
first one's raw JSON, and, for members of a chunk run — the same JSON but for seq, time
and their last string value — each member's bytes between that value's quotes (None for
one event): ``indexer.store.blocks.format.StoredGroup``. A run's members are judged
once, by the first one's JSON."""
Around = Callable[[int, int], Sequence[Stored]]
"""Reads the session's stored events of seqs ``first``..``last`` (clipped to the log)."""

_FIELDS: Final = {
    "text-delta": "text",
    "reasoning-delta": "text",
    "tool-call-delta": "argumentsDelta",
}
_BOUNDS: Final = frozenset({"block-start", "block-end"})


def _chunk(data: Any) -> dict[str, Any] | None:
    if not isinstance(data, dict):
        return None
    chunk = data.get("chunk")
    return chunk if isinstance(chunk, dict) else None


def _delta(data: Any) -> tuple[tuple[Any, ...], str] | None:
    chunk = _chunk(data)
    return None if chunk is None else _chunk_delta(data, chunk)


def _chunk_delta(data: dict[str, Any], chunk: dict[str, Any]) -> tuple[tuple[Any, ...], str] | None:
    """The run key and delta text of the chunk ``data["chunk"]``, or None when it is no
    delta (a stored event may hold any JSON there: a ``type`` that is not a string is none)."""
    ctype = chunk.get("type")
    field = _FIELDS.get(ctype) if isinstance(ctype, str) else None
    text = None if field is None else chunk.get(field)
    if not isinstance(text, str):
        return None
    return (data.get("turn"), data.get("step"), chunk.get("index"), ctype), text


def delta_of(event: SessionEvent) -> tuple[tuple[Any, ...], str] | None:
    """The run key and delta text of a delta chunk; None for any other event."""
    return _delta(event.data) if event.type == "assistant/chunk" else None


def _side(around: Around, seq: int, step: int, key: tuple[Any, ...]) -> list[tuple[int, str]]:
    """(seq, delta) of the run's members on one side of ``seq`` (``step`` -1 or 1): the
    stored events beside it are visited outward, up to ``CONTEXT_EVENTS`` of them, read
    ``CONTEXT_STEPS`` at a time (most runs end within the first)."""
    members: list[tuple[int, str]] = []
    visited = 0
    for size in CONTEXT_STEPS:
        if step > 0:
            lo, hi = seq + visited + 1, seq + visited + size
        else:
            lo, hi = seq - visited - size, seq - visited - 1
        stored = list(around(max(0, lo), hi)) if hi >= 0 else []
        expect, got = (lo, 0) if step > 0 else (hi, 0)
        for group in stored if step > 0 else reversed(stored):
            first = group[0]
            last = first + (0 if group[3] is None else len(group[3]) - 1)
            if (first if step > 0 else last) != expect:
                return members  # not the next seq: nothing is read past a gap
            found = _judged(group, key)
            if found is None:
                return members
            members += found if step > 0 else reversed(found)
            got += last - first + 1
            expect = last + 1 if step > 0 else first - 1
        if got < size:  # the log's first or last event
            return members
        visited += size
    return members


def _judged(stored: Stored, key: tuple[Any, ...]) -> list[tuple[int, str]] | None:
    """The (seq, delta) of the run members among ``stored`` (in seq order), or None when
    the run ends at them: a non-chunk event, or a block bound of the run's index. A
    chunk without a delta of the run (usage, another block's) neither joins nor ends it."""
    first, kind, raw, deltas = stored
    if kind != "assistant/chunk":
        return None
    data = load_json(raw).get("data")
    chunk = _chunk(data)
    if chunk is None:
        return []
    ctype = chunk.get("type")
    if isinstance(ctype, str) and ctype in _BOUNDS and chunk.get("index") == key[2]:
        return None
    found = _chunk_delta(data, chunk)
    if found is None or found[0] != key:
        return []
    if deltas is None:
        return [(first, found[1])]
    return list(enumerate(_run_texts(raw, deltas, _FIELDS[key[3]], found[1]), start=first))


def _run_texts(raw: bytes, deltas: Sequence[bytes], field: str, first_text: str) -> list[str]:
    """Each member's value of ``field``: the stored last string value when that is the
    field — the first member's raw ends with it (a JSON reader keeps the last of
    duplicate keys, so that is the value parsing gave) — else each member's JSON
    rebuilt and parsed."""
    tail = b'"}}}'
    head = raw[: len(raw) - len(deltas[0]) - len(tail)]
    if head.endswith(b'"' + field.encode() + b'":"'):
        return [first_text, *_strings(deltas[1:])]
    texts = []
    for delta in deltas:
        data = load_json(head + delta + tail).get("data")
        found = _delta(data)
        texts.append("" if found is None else found[1])
    return texts


def _strings(stored: Sequence[bytes]) -> list[str]:
    """The texts of JSON strings' stored contents (the bytes between their quotes),
    decoded as one JSON array."""
    if not stored:
        return []
    texts: list[str] = load_json(b'["' + b'","'.join(stored) + b'"]')
    return texts


def _piece(text: str, start: int, spans: Sequence[tuple[int, int, str]]) -> str:
    """The delta at ``start`` of the run's text with the secrets' characters taken out."""
    end = start + len(text)
    out: list[str] = []
    pos = start
    for s, e, kind in spans:
        if e <= start or s >= end:
            continue
        out.append(text[pos - start : max(s, start) - start])
        if s >= start:
            out.append(marker(kind))
        pos = min(e, end)
    out.append(text[pos - start :])
    return "".join(out)


def redact_target(redaction: Redaction, target: SessionEvent, around: Around) -> SessionEvent:
    """``target`` (a delta chunk) with what its run's secrets leave of its delta; any
    other event unchanged. ``around(first, last)`` reads the session's stored events of
    those seqs (clipped to the log)."""
    found = delta_of(target) if redaction.active else None
    if found is None:
        return target
    key, text = found
    beside = [*_side(around, target.seq, -1, key), *_side(around, target.seq, 1, key)]
    run = sorted([*beside, (target.seq, text)])
    start = 0
    for seq, delta in run:
        if seq == target.seq:
            break
        start += len(delta)
    findings = detector().find("".join(delta for _seq, delta in run))
    piece = _piece(text, start, [(f.start, f.end, f.kind) for f in findings])
    if piece == text:
        return target
    chunk = _chunk(target.data)
    assert chunk is not None
    field = _FIELDS[str(chunk["type"])]
    obj = {**target.obj, "data": {**target.data, "chunk": {**chunk, field: piece}}}
    return SessionEvent(target.type, target.seq, target.time, obj, dump_json(obj))
