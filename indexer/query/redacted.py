"""What readers show of a data dir that redacts secrets: its recorded redaction
(``indexer.redact.state.reader_redaction``) applied to every event and title a read
returns. Snippets need nothing here: they are cut from the index text, which the writer
redacted already.

An event is redacted as decoded JSON (``Redaction.event``), so ``session_event_read``'s
unabridged JSON stays valid and its neighbour summaries, extracted from the redacted
event, hold the same markers. A target that is a streamed delta chunk is first redacted
across its run (``indexer.redact.chunks``: ``around`` reads the events beside it). In
``store`` mode the stored events hold markers already; redacting them again changes
nothing but what a newer rule set finds.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Final

from indexer.query.types import EventWindow, TitleObservation
from indexer.redact import Redaction
from indexer.redact.chunks import Around, delta_of, redact_target

__all__ = ["redacted_titles", "redacted_window"]


def redacted_window(redaction: Redaction, window: EventWindow, around: Around) -> EventWindow:
    """``around(first, last)``: the session's stored events of those seqs (undecoded)."""
    if not redaction.active:
        return window
    target = window.target
    if delta_of(target) is not None:
        target = redact_target(redaction, target, around)
    events = redaction.events([target if e.seq == target.seq else e for e in window.events])
    shown = next(e for e in events if e.seq == target.seq)
    return dataclasses.replace(window, target=shown, events=events)


REMEMBERED_TITLE_CHARS: Final = 1024


@functools.lru_cache(maxsize=1 << 13)
def _remembered_title(redaction: Redaction, title: str) -> str:
    return redaction.text(title)


def _shown_title(redaction: Redaction, title: str) -> str:
    """A title as shown: a pure function of the mode and the text. Every listing shows
    the same titles again, so titles up to ``REMEMBERED_TITLE_CHARS`` are remembered
    (at most 8192 of them)."""
    if len(title) > REMEMBERED_TITLE_CHARS:
        return redaction.text(title)
    return _remembered_title(redaction, title)


def redacted_titles(
    redaction: Redaction, observations: Sequence[TitleObservation]
) -> list[TitleObservation]:
    if not redaction.active:
        return list(observations)
    out: list[TitleObservation] = []
    for obs in observations:
        if obs.title is not None:
            text = _shown_title(redaction, obs.title.title)
            if text != obs.title.title:
                obs = dataclasses.replace(obs, title=dataclasses.replace(obs.title, title=text))
        out.append(obs)
    return out
