"""The event envelope check of SPEC §1.2, applied when a whole log is read or seeded.

It only looks at the envelope keys; surface rules (which types may carry ``surfaceOp``
and ``sourceEventSeqs``, contiguity) belong to the fold.
"""

from __future__ import annotations

from typing import Any, Final

from indexer.errors import LogValidationError
from indexer.model.event import SessionEvent, dump_json
from indexer.model.header import is_nonneg_safe_int, is_safe_int

__all__ = ["ENVELOPE_KEYS", "check_envelope", "event_raw"]

ENVELOPE_KEYS: Final = frozenset(
    {"type", "seq", "time", "data", "ignorable", "surfaceOp", "sourceEventSeqs"}
)


def event_raw(obj: Any) -> bytes:
    """The stored compact form of an event (``dump_json``: key order kept)."""
    return dump_json(obj)


def _invalid(index: int, why: str) -> LogValidationError:
    return LogValidationError(f"seed event at index {index} has an invalid event envelope: {why}")


def check_envelope(obj: Any, index: int) -> SessionEvent:
    """Validate one decoded event object at position ``index`` and wrap it.

    Checks, in order: a JSON object; no key outside :data:`ENVELOPE_KEYS`; ``type`` a
    string; ``seq`` a non-negative safe integer; ``time`` a safe integer; ``data``
    present; ``ignorable``, when present, the literal ``true``. The message starts
    with the exact SPEC text ``seed event at index <i> has an invalid event envelope``
    followed by ``: <reason>``. The object is kept as is (key order included).
    """
    if not isinstance(obj, dict):
        raise _invalid(index, "not a JSON object")
    for key in obj:
        if key not in ENVELOPE_KEYS:
            raise _invalid(index, f'unknown key "{key}"')
    etype = obj.get("type")
    if not isinstance(etype, str):
        raise _invalid(index, "type must be a string")
    seq = obj.get("seq")
    if not is_nonneg_safe_int(seq):
        raise _invalid(index, "seq must be a non-negative safe integer")
    time = obj.get("time")
    if not is_safe_int(time):
        raise _invalid(index, "time must be a safe integer")
    if "data" not in obj:
        raise _invalid(index, "data is missing")
    if "ignorable" in obj and obj["ignorable"] is not True:
        raise _invalid(index, "ignorable must be true when present")
    return SessionEvent(
        type=etype, seq=int(obj["seq"]), time=int(obj["time"]), obj=obj, raw=event_raw(obj)
    )
