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

import functools
from collections import Counter
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

    def event(self, event: SessionEvent, counts: Counter[str] | None = None) -> SessionEvent:
        """``event`` with every string of its JSON redacted; the same object when nothing
        was found (its raw bytes then stay the original ones)."""
        if not self.active:
            return event
        from indexer.redact.values import redact_value

        found: Counter[str] = Counter()
        obj = redact_value(detector(), event.obj, found)
        if obj is event.obj:
            return event
        if counts is not None:
            counts.update(found)
        return SessionEvent(event.type, event.seq, event.time, obj, dump_json(obj))


OFF: Final = Redaction("off")
DEFAULT: Final = Redaction("on")
"""``--redact-secrets``'s default."""
