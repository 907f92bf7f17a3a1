"""What the tool/result rewrite rule (SPEC §2.1 step 5) compares of a node, kept small.

A ``tool/result`` replace may change only the result's content: the rewritten node and
the replacement must be equal, JSON-wise, once the nested content is blanked. A reader
folding a long log must answer that for any current ``tool/result`` node it has seen, so
it keeps, per node, only this shape — a 16-byte digest of the blanked data — never the
result itself (a log of a quarter million tool results held every one of them).

The digest is taken over a canonical form that agrees with ``fold.json_equal``: object
keys in sorted order, numbers by value (``1`` and ``1.0`` alike), booleans apart from
numbers, strings as their UTF-8 (a lone surrogate kept), so two blanked data have the
same digest exactly when they are ``json_equal`` (barring a 128-bit collision).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from indexer.model.event import SessionEvent

__all__ = ["ResultShape", "blank_result_content"]


@dataclass(frozen=True, slots=True)
class ResultShape:
    """Whether a node is a ``tool/result``, and the digest of its blanked data."""

    is_result: bool
    digest: bytes = b""

    @classmethod
    def of(cls, event: SessionEvent) -> ResultShape:
        if event.type != "tool/result":
            return cls(False)
        return cls(True, digest(blank_result_content(event.data)))


def digest(value: Any) -> bytes:
    """The 16-byte digest of ``value``'s canonical form (module docstring)."""
    h = hashlib.blake2b(digest_size=16)
    _feed(h, value)
    return h.digest()


def _feed(h: Any, value: Any) -> None:
    if value is True or value is False:
        h.update(b"t" if value else b"f")
    elif value is None:
        h.update(b"n")
    elif isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        h.update(b"#" + str(int(value)).encode() + b";")
    elif isinstance(value, float):
        h.update(b"#" + repr(value).encode() + b";")
    elif isinstance(value, str):
        raw = value.encode("utf-8", "surrogatepass")
        h.update(b"s" + str(len(raw)).encode() + b":" + raw)
    elif isinstance(value, list):
        h.update(b"[")
        for item in value:
            _feed(h, item)
        h.update(b"]")
    elif isinstance(value, dict):
        h.update(b"{")
        for key in sorted(value):
            _feed(h, key)
            _feed(h, value[key])
        h.update(b"}")
    else:  # not JSON: its own type and text, never equal to a JSON value
        h.update(b"?" + repr(value).encode("utf-8", "surrogatepass"))


def _blank_first_block(content: Any) -> list[Any]:
    """``[{...content[0], content: null}]`` - only block 0 is compared (SPEC quirk)."""
    first = content[0] if isinstance(content, list) and content else None
    block: dict[str, Any] = dict(first) if isinstance(first, dict) else {}
    block["content"] = None
    return [block]


def blank_result_content(data: Any) -> Any:
    """``data`` with the nested result content blanked, everything else kept.

    Current shape: ``message.content[0].content`` is blanked. Older shape without
    ``message`` (deliberate difference 9): ``data.content`` holds the result content
    itself, so it is blanked whole - unless it is a list of ``tool-result`` blocks, which
    is blanked like ``message.content``.
    """
    if not isinstance(data, dict):
        return data
    if "message" in data:
        message = data["message"]
        if not isinstance(message, dict):
            return data
        blanked = {**message, "content": _blank_first_block(message.get("content"))}
        return {**data, "message": blanked}
    if "content" not in data:
        return data
    content = data["content"]
    if (
        isinstance(content, list)
        and content
        and isinstance(content[0], dict)
        and content[0].get("type") == "tool-result"
    ):
        return {**data, "content": _blank_first_block(content)}
    return {**data, "content": None}
