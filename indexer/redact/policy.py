"""What one process redacts: the ``Redaction`` policy of a mode, used by the writer for
what it indexes and stores, and by readers for what they show.

* ``off``   nothing is redacted anywhere (upstream-exact output).
* ``on``    the writer indexes redacted text (a secret is never searchable, never in a
            snippet) and stores raw events unchanged; readers redact every event and
            title they return.
* ``store`` as ``on``, and the writer redacts each event before anything is stored, so no
            file of the data dir (nor a snapshot or a replica) holds a detected secret.

Index text is redacted after extraction (``text``), events as decoded JSON (``event``:
``indexer.redact.values``). Either way a secret becomes ``[REDACTED:<kind>]``; the counts
of what was redacted, by kind, go to the ``counts`` the caller passes.
"""

from __future__ import annotations

import bisect
import functools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from indexer.model import SessionEvent
from indexer.model.event import dump_json
from indexer.redact.detect import Detector

__all__ = ["DEFAULT", "MODES", "OFF", "RedactMode", "Redaction", "detector"]

RedactMode = Literal["off", "on", "store"]
MODES: Final[tuple[RedactMode, ...]] = ("off", "on", "store")


@functools.cache
def detector() -> Detector:
    """The process's compiled rule set (built on first use: ``off`` never loads it)."""
    return Detector()


def _may_hold(events: Sequence[SessionEvent]) -> set[int]:
    """The indices of the events whose JSON may hold a secret: those holding a rule
    keyword that may be in a string the walk tests, found in one pass over their JSON
    texts joined (most events hold none). A keyword in a decoded string is in its JSON
    text too (keywords hold no character JSON escapes), unless an escape spells a letter
    or a slash (``\\u0041``, ``\\/``): such an event is walked whole. A keyword only in
    the names of members whose values are no strings (``"inputTokens": 10``, in every
    usage record) cannot be: the walk keeps names and tests a name only with its string
    value (``_names_no_string``)."""
    texts: list[str] = []
    starts: list[int] = []
    at = 0
    maybe: set[int] = set()
    for i, event in enumerate(events):
        if b"\\u" in event.raw or b"\\/" in event.raw:
            maybe.add(i)
        text = event.raw.decode("utf-8", "surrogateescape").lower()  # offsets as matched
        starts.append(at)
        texts.append(text)
        at += len(text) + 1
    joined = "\n".join(texts)
    for start, end in detector().keyword_spans(joined):
        i = bisect.bisect_right(starts, start) - 1
        if i not in maybe and not _names_no_string(joined, starts[i], len(texts[i]), start, end):
            maybe.add(i)
    return maybe


_JSON_SPACE: Final = " \t\n\r"


def _names_no_string(text: str, lo: int, size: int, start: int, end: int) -> bool:
    """Whether ``text[start:end]``, in the JSON text ``text[lo:lo + size]`` (valid JSON:
    a stored event's), lies in the name of an object member whose value is no string:
    the nearest quotes around it hold no backslash, the one before follows ``{`` or
    ``,`` and the one after is followed by ``:`` and a value not starting with a quote.
    Outside strings valid JSON holds no keyword's letters, so those quotes delimit the
    string holding it, and a string between ``{``/``,`` and ``:`` is a name. Anything
    else (an escaped quote, a value, a string value) answers False: walk."""
    hi = lo + size
    opening = text.rfind('"', lo, start)
    closing = text.find('"', end, hi)
    if opening < 0 or closing < 0 or text.find("\\", opening, closing) >= 0:
        return False
    j = opening - 1
    while j >= lo and text[j] in _JSON_SPACE:
        j -= 1
    if j < lo or text[j] not in "{,":
        return False
    k = closing + 1
    while k < hi and text[k] in _JSON_SPACE:
        k += 1
    if k >= hi or text[k] != ":":
        return False
    k += 1
    while k < hi and text[k] in _JSON_SPACE:
        k += 1
    return k < hi and text[k] != '"'


@dataclass(frozen=True, slots=True)
class Redaction:
    mode: RedactMode

    @property
    def active(self) -> bool:
        return self.mode != "off"

    @property
    def stores_redacted(self) -> bool:
        return self.mode == "store"

    def text(self, text: str, counts: Counter[str] | None = None) -> str:
        """Index or display text with its secrets replaced (``off``: unchanged)."""
        if not self.active or not text:
            return text
        redacted, found = detector().redact(text)
        if counts is not None:
            counts.update(f.kind for f in found)
        return redacted

    def event(self, event: SessionEvent) -> SessionEvent:
        """``event`` with every string of its JSON redacted; the same object when nothing
        was found (its raw bytes then stay the original ones)."""
        return self.events([event])[0]

    def events(
        self, events: Sequence[SessionEvent], counts: dict[int, Counter[str]] | None = None
    ) -> list[SessionEvent]:
        """``event`` of each, the events picked in one pass (``_may_hold``); ``counts``
        gets the kinds found in each changed event, by its seq."""
        if not self.active:
            return list(events)
        out = list(events)
        for i in sorted(_may_hold(events)):
            found: Counter[str] = Counter()
            out[i] = self._walked(events[i], found)
            if counts is not None and found:
                counts[events[i].seq] = found
        return out

    def _walked(self, event: SessionEvent, found: Counter[str]) -> SessionEvent:
        from indexer.redact.values import redact_value

        obj = redact_value(detector(), event.obj, found)
        if obj is event.obj:
            return event
        return SessionEvent(event.type, event.seq, event.time, obj, dump_json(obj))


OFF: Final = Redaction("off")
DEFAULT: Final = Redaction("on")
"""``--redact-secrets``'s default."""
