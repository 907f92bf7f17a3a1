"""The run of a streamed delta chunk (``indexer.redact.chunks.redact_target``): which
stored events beside the target join it, and that no stored neighbour, whatever JSON it
holds, stops the target's read."""

from __future__ import annotations

from typing import Any

import orjson

from indexer.model import SessionEvent
from indexer.redact import Redaction
from indexer.redact.chunks import Stored, redact_target

SECRET = "sk-ant-api03-" + "Q7x9Kp2mZr4Tn8Wv" * 5 + "-AbCdEfGh"


def _chunk(seq: int, chunk: Any, **data: Any) -> dict[str, Any]:
    body = {"turn": 1, "step": 1, **data, "chunk": chunk}
    return {"type": "assistant/chunk", "seq": seq, "time": 1_000 + seq, "data": body}


def _delta(seq: int, text: str) -> dict[str, Any]:
    return _chunk(seq, {"type": "text-delta", "index": 0, "text": text})


def _stored(objs: list[dict[str, Any]]) -> list[Stored]:
    return [(o["seq"], o["type"], orjson.dumps(o)) for o in objs]


def _pieces(secret: str, size: int) -> list[str]:
    text = f"key: {secret} ok"
    return [text[i : i + size] for i in range(0, len(text), size)]


def _shown(objs: list[dict[str, Any]], at: int) -> str:
    target = SessionEvent.from_obj(objs[at])
    shown = redact_target(Redaction("on"), target, _stored(objs))
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
