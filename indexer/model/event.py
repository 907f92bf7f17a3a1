"""One session event: its envelope fields plus the exact JSON object it came from."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

import orjson

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
SURFACE_ELIGIBLE = frozenset({"user/message", "assistant/message", "tool/result"})


def dump_json(obj: Any) -> bytes:
    """Compact JSON keeping key order, in a bytes object of its own size.

    Falls back to ``json`` for what orjson refuses: integers beyond 64 bits, and lone
    UTF-16 surrogates (a streamed delta can split a pair), which stay ``\\udxxx`` escapes
    (the one rule for them: docs/host-integration.md, "Strings"). Never writes what is
    not JSON: ``NaN`` and infinities raise ``ValueError`` there (orjson writes ``null``).
    The result is kept (an event's ``raw``, as long as its batch lives), and orjson hands
    back its output buffer as it grew (4 KiB at least since orjson 3.12, for any text):
    the copy is the text's size and the buffer is freed at once.
    """
    try:
        return bytes(memoryview(orjson.dumps(obj)))
    except TypeError:
        text = json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        try:
            return text.encode()
        except UnicodeEncodeError:
            return json.dumps(obj, allow_nan=False, separators=(",", ":")).encode()


def json_text(obj: Any) -> str:
    """Compact JSON text of ``obj`` as JavaScript's ``JSON.stringify`` writes it: a lone
    UTF-16 surrogate becomes its ``\\udxxx`` escape (a raw one can stand only inside a
    string of the text), everything else as ``dump_json`` writes it."""
    try:
        return orjson.dumps(obj).decode()
    except TypeError:
        text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def load_json(raw: bytes | str) -> Any:
    """The value of a JSON text (stored, or a record's UTF-8 value) as JavaScript's
    ``JSON.parse`` reads it; else ``orjson.JSONDecodeError``, orjson's own.

    orjson reads everything but the one input JavaScript accepts and orjson refuses, a
    lone UTF-16 surrogate escape (a streamed delta that split a pair: ``\\ud83d`` in one
    chunk, ``\\ude00`` in the next), which ``dump_json`` writes too. The stdlib reads
    that, held to what orjson takes otherwise: UTF-8 only, no ``NaN`` or ``Infinity``, a
    number beyond a double refused and an integer beyond 64 bits a double; any failure
    there (a ``RecursionError`` too) is orjson's error.
    """
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        try:
            return json.loads(
                raw if isinstance(raw, str) else raw.decode("utf-8"),
                parse_constant=_not_json,
                parse_float=_finite_double,
                parse_int=_orjson_int,
            )
        except (ValueError, RecursionError):
            raise exc from None


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_double(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {text} is not a finite double")
    return value


def _orjson_int(text: str) -> int | float:
    value = int(text)
    return value if -(2**63) <= value < 2**64 else _finite_double(text)


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
