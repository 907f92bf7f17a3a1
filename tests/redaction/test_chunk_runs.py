"""The run of a streamed delta chunk (``indexer.redact.chunks.redact_target``): which
stored events beside the target join it, and that no stored neighbour, whatever JSON it
holds, stops the target's read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from indexer.model import SessionEvent
from indexer.model.event import dump_json
from indexer.redact import Redaction
from indexer.redact.chunks import CONTEXT_EVENTS, Around, Stored, _side, delta_of, redact_target
from indexer.store.blocks.format import StoredEvent, encode, split_blocks
from indexer.store.blocks.payload import Payload

SECRET = "sk-ant-api03-" + "Q7x9Kp2mZr4Tn8Wv" * 5 + "-AbCdEfGh"


def _chunk(seq: int, chunk: Any, **data: Any) -> dict[str, Any]:
    body = {"turn": 1, "step": 1, **data, "chunk": chunk}
    return {"type": "assistant/chunk", "seq": seq, "time": 1_000 + seq, "data": body}


def _delta(seq: int, text: str) -> dict[str, Any]:
    return _chunk(seq, {"type": "text-delta", "index": 0, "text": text})


def _stored(objs: list[dict[str, Any]]) -> list[StoredEvent]:
    return [
        StoredEvent(o["seq"], o["type"], o["time"], "log-only", False, dump_json(o))
        for o in objs
    ]


def _around(stored: Sequence[StoredEvent], reads: list[tuple[int, int]] | None = None) -> Around:
    """A session's stored events as ``redact_target`` reads them, through the block
    format (chunk runs packed, read back as groups); ``reads`` records each range."""
    blocks = [(block[0].seq, Payload(encode(block))) for block in split_blocks(stored)]

    def read(first: int, last: int) -> list[Stored]:
        if reads is not None:
            reads.append((first, last))
        out: list[Stored] = []
        for first_seq, payload in blocks:
            out += payload.groups(first_seq, first, last)
        return out

    return read


def _pieces(secret: str, size: int) -> list[str]:
    text = f"key: {secret} ok"
    return [text[i : i + size] for i in range(0, len(text), size)]


def _shown(objs: list[dict[str, Any]], at: int) -> str:
    target = SessionEvent.from_obj(objs[at])
    shown = redact_target(Redaction("on"), target, _around(_stored(objs)))
    return str(shown.data["chunk"]["text"])


def test_a_secret_split_over_deltas_is_taken_out_of_each() -> None:
    objs = [_delta(i, piece) for i, piece in enumerate(_pieces(SECRET, 7))]
    joined = "".join(_shown(objs, i) for i in range(len(objs)))
    assert SECRET not in joined
    assert joined.startswith("key: [REDACTED:") and joined.endswith("] ok")


def test_odd_neighbours_neither_join_nor_end_the_run_nor_fail_the_read() -> None:
    """Chunks whose ``chunk`` or ``chunk.type`` is not what a delta holds (a list, a
    number, null, an object: a stored event may hold any JSON) are stepped over, as a
    usage chunk is; the deltas on both sides still form one run."""
    pieces = _pieces(SECRET, 9)
    odd = [
        _chunk(0, {"type": ["text-delta"], "index": 0, "text": "x"}),
        _chunk(0, {"type": {"a": 1}, "index": 0}),
        _chunk(0, {"type": 7, "index": 0}),
        _chunk(0, None),
        _chunk(0, [1, 2]),
        _chunk(0, {"type": "usage", "index": 0}),
    ]
    objs: list[dict[str, Any]] = []
    deltas: list[int] = []
    for i, piece in enumerate(pieces):
        deltas.append(len(objs))
        objs.append(_delta(0, piece))
        if i == 1:
            objs.extend(odd)
    for seq, obj in enumerate(objs):
        obj["seq"], obj["time"] = seq, 1_000 + seq
    joined = "".join(_shown(objs, i) for i in deltas)
    assert SECRET not in joined
    assert joined.startswith("key: [REDACTED:") and joined.endswith("] ok")


def test_a_block_bound_of_the_same_index_ends_the_run() -> None:
    pieces = _pieces(SECRET, 9)
    half = len(pieces) // 2
    objs = [_delta(i, p) for i, p in enumerate(pieces[:half])]
    objs.append(_chunk(half, {"type": "block-end", "index": 0}))
    objs += [_delta(half + 1 + i, p) for i, p in enumerate(pieces[half:])]
    joined = "".join(_shown(objs, i) for i in range(len(objs)) if i != half)
    assert joined == "".join(pieces)  # neither half holds the whole secret


def test_a_run_longer_than_the_first_read_is_read_further_and_no_further() -> None:
    """Deltas of three characters: the secret spans far more than the first read of
    each side, and is still taken out of every delta; no read reaches past
    ``CONTEXT_EVENTS`` from its target."""
    pieces = _pieces(SECRET, 3)
    objs = [_delta(i, piece) for i, piece in enumerate(pieces)]
    stored = _stored(objs)
    joined = ""
    for i, obj in enumerate(objs):
        reads: list[tuple[int, int]] = []
        shown = redact_target(Redaction("on"), SessionEvent.from_obj(obj), _around(stored, reads))
        joined += str(shown.data["chunk"]["text"])
        assert all(i - CONTEXT_EVENTS <= lo and hi <= i + CONTEXT_EVENTS for lo, hi in reads)
        assert len(reads) <= 4
    assert SECRET not in joined and joined.startswith("key: [REDACTED:") and joined.endswith("] ok")


def _reference_run(stored: Sequence[StoredEvent], at: int, key: tuple[Any, ...]) -> list[int]:
    """The seqs of the run's other members as one read of ``CONTEXT_EVENTS`` stored
    events on each side finds them (the rule of ``indexer.redact.chunks``, walked event
    by event over the whole context at once)."""
    seq = stored[at].seq
    context = [s for s in stored if seq - CONTEXT_EVENTS <= s.seq <= seq + CONTEXT_EVENTS]
    i0 = next(i for i, s in enumerate(context) if s.seq == seq)
    members: list[int] = []
    for step in (-1, 1):
        i = i0 + step
        while 0 <= i < len(context):
            event = context[i]
            if event.type != "assistant/chunk":
                break
            i += step
            data = orjson.loads(event.raw)["data"]
            chunk = data["chunk"]
            if chunk["type"] in ("block-start", "block-end") and chunk["index"] == key[2]:
                break
            if chunk["type"] == "text-delta" and (1, 1, chunk["index"], "text-delta") == key:
                members.append(event.seq)
    return sorted(members)


def test_a_run_longer_than_the_context_is_read_to_its_bound_on_each_side() -> None:
    objs = [_delta(i, "a") for i in range(3 * CONTEXT_EVENTS)]
    stored = _stored(objs)
    around = _around(stored)
    for at in range(len(objs)):
        found = delta_of(SessionEvent.from_obj(objs[at]))
        assert found is not None
        walked = [*_side(around, at, -1, found[0]), *_side(around, at, 1, found[0])]
        assert sorted(s for s, _ in walked) == _reference_run(stored, at, found[0])
        assert {text for _, text in walked} == {"a"}


# stored escaped: the members' texts are decoded from the bytes between their quotes
_ODD_TEXTS = ["\n\u00e9", '"', "\\", '","', "\u2028\x00", "\U0001f600", ""]
_KINDS = ["delta0", "delta0", "delta1", "usage", "end0", "end1", "message"]
# runs short and long: long ones reach the context's bound, and cross reads
_EVENTS = st.one_of(
    st.lists(st.sampled_from(_KINDS), min_size=1, max_size=300),
    st.lists(st.sampled_from(["delta0"] * 60 + _KINDS), min_size=1, max_size=300),
)


@settings(max_examples=400, deadline=None)
@given(_EVENTS, st.data())
def test_the_run_read_step_by_step_is_the_run_of_the_whole_context(
    kinds: list[str], data: st.DataObject
) -> None:
    """Read through the block format (consecutive deltas packed, each with a text of
    its own, escapes and quotes among them), the walk finds the members and texts a
    walk over every event finds."""
    objs: list[dict[str, Any]] = []
    for seq, kind in enumerate(kinds):
        if kind.startswith("delta"):
            text = f"<{seq}{_ODD_TEXTS[seq % len(_ODD_TEXTS)]}>"
            objs.append(_chunk(seq, {"type": "text-delta", "index": int(kind[-1]), "text": text}))
        elif kind.startswith("end"):
            objs.append(_chunk(seq, {"type": "block-end", "index": int(kind[-1])}))
        elif kind == "usage":
            objs.append(_chunk(seq, {"type": "usage", "index": 0}))
        else:
            objs.append({"type": "user/message", "seq": seq, "time": seq, "data": {}})
    deltas = [i for i, k in enumerate(kinds) if k.startswith("delta")]
    if not deltas:
        return
    at = data.draw(st.sampled_from(deltas))
    stored = _stored(objs)
    found = delta_of(SessionEvent.from_obj(objs[at]))
    assert found is not None
    around = _around(stored)
    key = found[0]
    walked = sorted([*_side(around, at, -1, key), *_side(around, at, 1, key)])
    expected = _reference_run(stored, at, key)
    assert walked == [(seq, objs[seq]["data"]["chunk"]["text"]) for seq in expected]


@pytest.mark.parametrize("escaped_key", [False, True])
def test_a_packed_run_whose_last_string_is_not_the_delta_reads_each_member(
    escaped_key: bool,
) -> None:
    """A chunk run is packed by its last string value; where that is not plainly the
    delta field — a later string, or the field's key spelled with an escape — each
    member's own JSON says what its delta is."""
    objs = []
    for seq in range(6):  # a run packs members that differ in their last string only
        if escaped_key:
            chunk = {"type": "text-delta", "index": 0, "text": f"t{seq}"}
        else:
            chunk = {"type": "text-delta", "index": 0, "text": "same", "note": f"n{seq}"}
        objs.append(_chunk(seq, chunk))
    stored = _stored(objs)
    if escaped_key:  # dump_json writes the key plainly: spell it with an escape
        stored = [e._replace(raw=e.raw.replace(b'"text":', b'"te\\u0078t":')) for e in stored]
    around = _around(stored)
    assert len(around(0, 5)) == 1, "the six chunks are stored as one packed run"
    target = SessionEvent.from_obj(orjson.loads(stored[2].raw), stored[2].raw)
    found = delta_of(target)
    assert found is not None
    walked = sorted([*_side(around, 2, -1, found[0]), *_side(around, 2, 1, found[0])])
    expected = [f"t{s}" if escaped_key else "same" for s in range(6)]
    assert found[1] == expected[2]
    assert walked == [(s, expected[s]) for s in range(6) if s != 2]
