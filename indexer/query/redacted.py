"""What readers show of a data dir that redacts secrets: its recorded redaction
(``indexer.redact.state.reader_redaction``) applied to every event and title a read
returns. Snippets need nothing here: they are cut from the index text, which the writer
redacted already.

An event is redacted as decoded JSON (``Redaction.event``), so ``session_event_read``'s
unabridged JSON stays valid and its neighbour summaries, extracted from the redacted
event, hold the same markers. In ``store`` mode the stored events hold markers already;
redacting them again changes nothing but what a newer rule set finds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from indexer.query.types import EventWindow, TitleObservation
from indexer.redact import Redaction

__all__ = ["redacted_titles", "redacted_window"]


def redacted_window(redaction: Redaction, window: EventWindow) -> EventWindow:
    if not redaction.active:
        return window
    events = [redaction.event(e) for e in window.events]
    target = next(e for e in events if e.seq == window.target.seq)
    return dataclasses.replace(window, target=target, events=events)


def redacted_titles(
    redaction: Redaction, observations: Sequence[TitleObservation]
) -> list[TitleObservation]:
    if not redaction.active:
        return list(observations)
    out: list[TitleObservation] = []
    for obs in observations:
        if obs.title is not None:
            text = redaction.text(obs.title.title)
            if text != obs.title.title:
                obs = dataclasses.replace(obs, title=dataclasses.replace(obs.title, title=text))
        out.append(obs)
    return out
