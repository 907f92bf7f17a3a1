"""One session event: its envelope fields plus the exact JSON object it came from."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import orjson

SURFACE_ELIGIBLE = frozenset({"user/message", "assistant/message", "tool/result"})


def dump_json(obj: Any) -> bytes:
    """Compact JSON keeping key order, in a bytes object of its own size.

    Falls back to ``json`` for what orjson refuses: integers beyond 64 bits, and lone
    UTF-16 surrogates (a streamed delta can split a pair), which stay ``\\uXXXX`` escapes.
    The result is kept (an event's ``raw``, as long as its batch lives), and orjson hands
    back its output buffer as it grew (4 KiB at least since orjson 3.12, for any text):
    the copy is the text's size and the buffer is freed at once.
    """
    try:
        return bytes(memoryview(orjson.dumps(obj)))
    except TypeError:
        text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        try:
            return text.encode()
        except UnicodeEncodeError:
            return json.dumps(obj, ensure_ascii=True, separators=(",", ":")).encode()


def load_json(raw: bytes) -> Any:
    """The value of stored JSON (``dump_json``'s output): orjson, else the stdlib for the
    one thing ``dump_json`` writes that orjson refuses to read, a lone UTF-16 surrogate
    escape (a streamed delta that split a pair: ``\ud83d`` in one chunk, ``\ude00`` in
    the next)."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)


@dataclass(frozen=True, slots=True)
class SessionEvent:
    """A decoded event. ``obj`` is the whole event object in its original key order.

    ``raw`` is ``obj`` as compact JSON: what the store keeps and ``session_event_read``
    prints. ``seq``/``time`` are ints once the envelope has been validated.
    """

    type: str
    seq: int
    time: int
    obj: dict[str, Any]
    raw: bytes

    @property
    def data(self) -> Any:
        return self.obj.get("data")

    @classmethod
    def from_obj(cls, obj: dict[str, Any], raw: bytes | None = None) -> SessionEvent:
        """Wrap an already envelope-checked object (see ``logs.envelope``)."""
        return cls(
            type=obj["type"],
            seq=int(obj["seq"]),
            time=int(obj["time"]),
            obj=obj,
            raw=raw if raw is not None else dump_json(obj),
        )
