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
    keyword, found in one pass over their JSON texts joined (most events hold none). A
    keyword in a decoded string is in its JSON text too (keywords hold no character JSON
    escapes), unless an escape spells a letter or a slash (``\\u0041``, ``\\/``): such
    an event is walked whole."""
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
    for end in detector().keyword_ends("\n".join(texts)):
        maybe.add(bisect.bisect_right(starts, end) - 1)
    return maybe


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
