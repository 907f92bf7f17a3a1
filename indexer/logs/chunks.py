"""Packed chunk rows (SPEC §1.5): one storage line that stands for a run of
``assistant/chunk`` delta events of the same block.

dsh writes them to save space; reading is layout-blind, so a row expands to exactly the
events it replaced, key order included. A malformed row is corrupt storage, never an
event: it fails loudly with ``malformed <tag> storage row: <why>`` (the upstream texts).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, TypeGuard

from indexer.errors import LogValidationError
from indexer.model.header import is_nonneg_safe_int, is_safe_int

__all__ = ["CHUNK_ROW_TAGS", "PackedChunks", "expand_chunk_row", "is_chunk_row", "pack_chunk_row"]

TEXT_ROW: Final = "text-chunks"
REASONING_ROW: Final = "reasoning-chunks"
TOOL_CALL_ROW: Final = "tool-call-chunks"
CHUNK_ROW_TAGS: Final = frozenset({TEXT_ROW, REASONING_ROW, TOOL_CALL_ROW})

_ROW_KEYS: Final = frozenset({"type", "seq0", "time0", "data"})
_TEXT_KEYS: Final = frozenset({"turn", "step", "index", "dt", "texts"})
_TOOL_KEYS: Final = frozenset({"turn", "step", "index", "id", "dt", "args"})
_TOOL_KEYS_NAMED: Final = _TOOL_KEYS | {"name"}


def is_chunk_row(obj: Any) -> TypeGuard[dict[str, Any]]:
    """Whether a decoded line is tagged as a chunk row (and so must expand or fail)."""
    if not isinstance(obj, dict):
        return False
    tag = obj.get("type")
    return isinstance(tag, str) and tag in CHUNK_ROW_TAGS


def _malformed(tag: str, why: str) -> LogValidationError:
    return LogValidationError(f"malformed {tag} storage row: {why}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _members(tag: str, data: dict[str, Any], payload_key: str) -> list[str]:
    """The shared run-data checks, in upstream order; returns the member payloads."""
    if not (_is_number(data["turn"]) and _is_number(data["step"]) and _is_number(data["index"])):
        raise _malformed(tag, "turn/step/index must be numbers")
    payload = data[payload_key]
    if (
        not isinstance(payload, list)
        or not payload
        or not all(isinstance(entry, str) for entry in payload)
    ):
        raise _malformed(tag, f"{payload_key} must be a non-empty string array")
    dt = data["dt"]
    if not isinstance(dt, list) or not all(is_safe_int(gap) for gap in dt):
        raise _malformed(tag, "dt must be an array of safe integers")
    if len(dt) != len(payload) - 1:
        raise _malformed(tag, f"dt length {len(dt)} does not match {len(payload)} members")
    return payload


@dataclass(frozen=True, slots=True)
class PackedChunks:
    """A validated chunk row, not expanded: member ``k`` is ``member(k)``.

    Readers that keep a row packed (``read_log_packed``, for ingest: the blocks store a
    run the way the row does) skip building hundreds of event objects per row.
    """

    tag: str
    seq0: int
    times: list[int]  # member k's time
    turn: Any
    step: Any
    index: Any
    call_id: str | None  # tool-call rows
    name: str | None  # tool-call rows whose members carry a name
    fragments: list[str]  # member k's text / arguments delta

    def member(self, k: int) -> dict[str, Any]:
        """Member ``k`` as the event object it stands for (key order included)."""
        chunk: dict[str, Any]
        if self.tag == TOOL_CALL_ROW:
            chunk = {"type": "tool-call-delta", "index": self.index, "id": self.call_id}
            if self.name is not None:
                chunk["name"] = self.name
            chunk["argumentsDelta"] = self.fragments[k]
        else:
            delta = "text-delta" if self.tag == TEXT_ROW else "reasoning-delta"
            chunk = {"type": delta, "index": self.index, "text": self.fragments[k]}
        return _member(self.seq0 + k, self.times[k], self.turn, self.step, chunk)

    def expand(self) -> list[dict[str, Any]]:
        return [self.member(k) for k in range(len(self.fragments))]


def expand_chunk_row(row: dict[str, Any]) -> list[dict[str, Any]]:
    """Validate a chunk row and expand it to its ``assistant/chunk`` event objects.

    Member ``k`` gets ``seq = seq0 + k`` and ``time = time0 + dt[0] + ... + dt[k-1]``;
    its key order is ``type, seq, time, data{turn, step, chunk}`` and the chunk is
    ``{type, index, text}`` for text/reasoning rows or ``{type, index, id, [name,]
    argumentsDelta}`` for tool-call rows (``name`` on every member iff the row has it).
    Raises :class:`LogValidationError` for a malformed row.
    """
    return pack_chunk_row(row).expand()


def pack_chunk_row(row: dict[str, Any]) -> PackedChunks:
    """Validate a chunk row (as ``expand_chunk_row`` does, same errors), unexpanded."""
    tag = row.get("type")
    if not isinstance(tag, str) or tag not in CHUNK_ROW_TAGS:
        raise ValueError(f"not a chunk row: {tag!r}")
    if row.keys() != _ROW_KEYS:
        raise _malformed(tag, "envelope must be exactly {type, seq0, time0, data}")
    seq0 = row["seq0"]
    if not is_nonneg_safe_int(seq0):
        raise _malformed(tag, "seq0 must be a non-negative safe integer")
    time0 = row["time0"]
    if not is_safe_int(time0):
        raise _malformed(tag, "time0 must be a safe integer")
    data = row["data"]
    # Upstream accepts arrays as "objects" here and then fails the exact-keys check.
    if not isinstance(data, (dict, list)):
        raise _malformed(tag, "data must be an object")
    named = False
    if tag == TOOL_CALL_ROW:
        named = isinstance(data, dict) and data.keys() == _TOOL_KEYS_NAMED
        if not isinstance(data, dict) or not (named or data.keys() == _TOOL_KEYS):
            raise _malformed(tag, "data must be exactly {turn, step, index, id, name?, dt, args}")
        if not isinstance(data["id"], str) or (named and not isinstance(data["name"], str)):
            raise _malformed(tag, "id (and name when present) must be strings")
        members = _members(tag, data, "args")
    else:
        if not isinstance(data, dict) or data.keys() != _TEXT_KEYS:
            raise _malformed(tag, "data must be exactly {turn, step, index, dt, texts}")
        members = _members(tag, data, "texts")

    first_seq = int(seq0)
    if first_seq + len(members) - 1 > 9007199254740991:
        raise _malformed(tag, "member seqs must stay safe integers")
    times = [int(time0)]
    for gap in data["dt"]:
        after = times[-1] + int(gap)
        if not is_safe_int(after):
            raise _malformed(tag, "member times must stay safe integers")
        times.append(after)
    tool = tag == TOOL_CALL_ROW
    return PackedChunks(
        tag=tag,
        seq0=first_seq,
        times=times,
        turn=data["turn"],
        step=data["step"],
        index=data["index"],
        call_id=data["id"] if tool else None,
        name=data["name"] if named else None,
        fragments=members,
    )


def _member(seq: int, time: int, turn: Any, step: Any, chunk: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "assistant/chunk",
        "seq": seq,
        "time": time,
        "data": {"turn": turn, "step": step, "chunk": chunk},
    }
