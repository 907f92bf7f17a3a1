"""Whole-document JSON logs (a Gemini CLI ``.json`` chat) read as a stream.

A chat document holds one session's every message in one array; read whole, a 126 MB
document took gigabytes of objects. ijson reads it in bounded memory instead: the
top-level members but the big array first (:func:`members`: the header's fields,
wherever they stand), then the array's items one at a time (:func:`items`), each built
only while it is mapped.

Backends: ijson's C backend (yajl) is the fast one, but it cannot give JavaScript's
reading of two inputs that ``JSON.parse`` accepts: a lone surrogate escape (``\\ud83d``,
a stream delta cut mid-character), which yajl turns into ``?``, and an integer beyond
64 bits, which it refuses. A document holding a surrogate escape, or one yajl refuses
for such an integer, is read with ijson's pure-Python backend, which reads both as
``parse_line`` does (slower; the result is the same). Numbers that are not integers
are floats, as in JavaScript.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import ijson  # type: ignore[import-untyped]
from ijson.common import JSONError, ObjectBuilder  # type: ignore[import-untyped]

from indexer.errors import LogValidationError
from indexer.logs.files import open_regular

__all__ = ["Document", "members", "open_document"]

_CHUNK: Final = 1 << 20
_SURROGATE_ESCAPE: Final = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_C_BACKEND: Final = "yajl2_c"
SNIFF_EVENTS: Final = 10_000
"""The parse events a sniff of a document's head reads at most."""
MEMBER_EVENTS: Final = 100_000
"""The parse events of one member read whole (but the streamed array): a chat's
metadata is a few dozen."""


def _has_surrogate_escape(path: Path) -> bool:
    """Whether the file holds a ``\\udXXX`` surrogate escape (read in chunks; an escape
    across a chunk edge is found by the overlap)."""
    tail = b""
    with open_regular(path) as f:
        while chunk := f.read(_CHUNK):
            if _SURROGATE_ESCAPE.search(tail + chunk):
                return True
            tail = chunk[-5:]
    return False


def _backend(name: str) -> Any:
    try:
        return ijson.get_backend(name)
    except ImportError:  # no compiled backend on this platform
        return ijson.get_backend("python")


def _failure(exc: Exception) -> LogValidationError:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return LogValidationError(f"document is not valid JSON: {first}")


@dataclass(frozen=True, slots=True)
class Document:
    """One document, its backend chosen (module docstring), and its top-level members
    but ``array`` (``array`` itself: ``[]`` when it is an array, absent otherwise)."""

    path: Path
    array: str
    members: dict[str, Any]
    backend: Any

    def items(self) -> Iterator[tuple[Any, int]]:
        """``(item, bytes read so far)`` of each item of the array, in order."""
        with open_regular(self.path) as f:
            try:
                for item in self.backend.items(f, f"{self.array}.item", use_float=True):
                    yield item, f.tell()
            except (JSONError, ValueError) as exc:
                raise _failure(exc) from exc


def members(path: Path, array: str, *, backend: Any = None, stop: bool = False) -> dict[str, Any]:
    """The top-level members of a JSON object document, ``array``'s value replaced by
    ``[]`` when it is an array (its items are never built). ``stop``: a sniff, which
    returns when the array starts or after ``SNIFF_EVENTS`` parse events (a member not
    whole by then is left out), so it reads only the document's head. Raises
    ``LogValidationError`` for a document that is not a JSON object or a member of more
    than ``MEMBER_EVENTS``, ``OSError`` for I/O errors."""
    out: dict[str, Any] = {}
    key: str | None = None
    builder: ObjectBuilder | None = None
    built = 0  # the events of the member being built
    depth = 0
    skipping = False
    with open_regular(path) as f:
        try:
            events = (backend or _backend(_C_BACKEND)).parse(f, use_float=True)
            for n, (_prefix, event, value) in enumerate(events):
                if stop and n >= SNIFF_EVENTS:
                    break
                if depth == 0:
                    if event != "start_map":
                        raise LogValidationError("document is not a JSON object")
                    depth = 1
                    continue
                if depth == 1 and event == "map_key":
                    key = value
                    continue
                if depth == 1 and event == "end_map":
                    break
                if depth == 1 and key == array and event == "start_array":
                    out[array] = []
                    if stop:
                        break
                    skipping, depth = True, 2
                    continue
                if event in ("start_map", "start_array"):
                    depth += 1
                elif event in ("end_map", "end_array"):
                    depth -= 1
                if skipping:
                    skipping = depth > 1
                    continue
                if builder is None:
                    builder, built = ObjectBuilder(), 0
                builder.event(event, value)
                built += 1
                if built > MEMBER_EVENTS:
                    raise LogValidationError(f"document member {key!r} is too large to read whole")
                if depth == 1:
                    out[str(key)] = builder.value
                    builder = None
        except (JSONError, ValueError) as exc:
            raise _failure(exc) from exc
    return out


def open_document(path: Path, array: str) -> Document:
    """The document with its members read (one pass over it) and its backend chosen."""
    backend = _backend("python") if _has_surrogate_escape(path) else _backend(_C_BACKEND)
    try:
        found = members(path, array, backend=backend)
    except LogValidationError as exc:
        if "integer overflow" not in exc.message:
            raise
        backend = _backend("python")
        found = members(path, array, backend=backend)
    return Document(path, array, found, backend)
