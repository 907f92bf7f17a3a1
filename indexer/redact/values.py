"""Redaction of decoded JSON: every string is redacted on its own, so the JSON stays valid
and a marker reads as plain text wherever it lands.

* A string is redacted as text (``Detector.redact``). A string that holds JSON itself (a
  tool call's ``arguments``) is still valid JSON afterwards when the markers replaced
  whole tokens, the usual case; when it is not (a secret ran across an escape), the
  string is decoded, redacted as a value and encoded again, compactly.
* An object member whose name says secret (``"password": "..."``, ``"API_TOKEN": ...``)
  is tested as the assignment ``name=value`` would be, so a value found only by its name
  is redacted although the name is a separate string.
* Keys, numbers, booleans and nulls are kept as they are. The walk is iterative: depth is
  not bounded by Python's stack.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Final

import orjson

from indexer.model.event import dump_json
from indexer.redact.detect import Detector, marker

__all__ = ["redact_string", "redact_value"]

NESTED_JSON_DEPTH: Final = 4
"""JSON inside JSON strings is decoded this many levels deep at most."""


def _name_kind(detector: Detector, name: str, value: str) -> str | None:
    """The generic rule's kind when ``name=value`` is an assignment of a secret to a name
    that says so, and the finding covers the whole value; else None."""
    if not detector.names_secret(name):
        return None
    probe = f"{name}={value}"
    for found in detector.find(probe):
        if found.start == len(name) + 1 and found.end == len(probe):
            return found.kind
    return None


def redact_string(detector: Detector, text: str, counts: Counter[str], depth: int = 0) -> str:
    """``text`` redacted; adds each secret's kind to ``counts``."""
    redacted, found = detector.redact(text)
    if not found:
        return text
    head = text.lstrip()[:1]
    if head in ("{", "[") and depth < NESTED_JSON_DEPTH:
        try:
            inner = orjson.loads(text)
        except orjson.JSONDecodeError:
            inner = None
        else:
            try:
                orjson.loads(redacted)
            except orjson.JSONDecodeError:
                value = redact_value(detector, inner, counts, depth + 1)
                return dump_json(value).decode()
    counts.update(f.kind for f in found)
    return redacted


def redact_value(detector: Detector, value: Any, counts: Counter[str], depth: int = 0) -> Any:
    """A copy of the decoded JSON ``value`` with every string redacted (the same object
    when nothing was found); adds each secret's kind to ``counts``."""
    if isinstance(value, str):
        return redact_string(detector, value, counts, depth)
    if not isinstance(value, (dict, list)):
        return value
    changed = False

    def one(name: str | None, item: Any) -> Any:
        nonlocal changed
        if isinstance(item, str):
            kind = None if name is None else _name_kind(detector, name, item)
            if kind is not None:
                counts[kind] += 1
                changed = True
                return marker(kind)
            out = redact_string(detector, item, counts, depth)
            if out is not item:
                changed = True
            return out
        return item

    # Iterative copy: (source container, target container) pairs still to fill.
    root: Any = {} if isinstance(value, dict) else []
    pending: list[tuple[Any, Any]] = [(value, root)]
    while pending:
        source, target = pending.pop()
        if isinstance(source, dict):
            for key, item in source.items():
                if isinstance(item, (dict, list)):
                    child: Any = {} if isinstance(item, dict) else []
                    target[key] = child
                    pending.append((item, child))
                else:
                    target[key] = one(key if isinstance(key, str) else None, item)
        else:
            for item in source:
                if isinstance(item, (dict, list)):
                    child = {} if isinstance(item, dict) else []
                    target.append(child)
                    pending.append((item, child))
                else:
                    target.append(one(None, item))
    return root if changed else value
