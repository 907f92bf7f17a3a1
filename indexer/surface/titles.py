"""The title fold (SPEC §4): a ``session/title`` event becomes a detached snapshot.

The store keeps only the last title event's snapshot ("last one wins, regardless of
source kind"), so this module folds one event; choosing the last one is the caller's
job. Upstream's copy of ``source`` understands exactly three kinds and fails on
anything else; that failure is an isolated per-session title error at the query layer,
so it is its own error class here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from indexer.errors import ErrorCode, SessionqError
from indexer.model.event import SessionEvent
from indexer.model.header import is_safe_int

__all__ = ["TITLE_EVENT_TYPE", "TitleMalformedError", "TitleSnapshot", "fold_title"]

TITLE_EVENT_TYPE = "session/title"


@dataclass(frozen=True, slots=True)
class TitleSnapshot:
    """A session's title as the title fold left it (SPEC §4)."""

    title: str
    message_seqs: list[int]
    source: dict[str, Any]
    event_seq: int
    updated_at: int


class TitleMalformedError(SessionqError):
    """A ``session/title`` payload the title fold cannot copy (SPEC §4)."""

    code = ErrorCode.TOOL_FAILED


def _copy_source(source: Any) -> dict[str, Any]:
    """Copy ``source`` keeping only the fields each known kind defines."""
    if not isinstance(source, dict):
        raise TitleMalformedError("session title source must be an object")
    kind = source.get("kind")
    if kind == "fallback":
        return {"kind": "fallback"}
    if kind == "user":
        return {"kind": "user"}
    if kind == "provider":
        provider = source.get("provider")
        if not isinstance(provider, str):
            raise TitleMalformedError("session title provider source must name a provider")
        out: dict[str, Any] = {"kind": "provider", "provider": provider}
        if "model" in source:
            model = source["model"]
            if not (
                isinstance(model, dict)
                and isinstance(model.get("provider"), str)
                and isinstance(model.get("model"), str)
            ):
                raise TitleMalformedError(
                    "session title provider model must be {provider, model} strings"
                )
            out["model"] = {"provider": model["provider"], "model": model["model"]}
        return out
    raise TitleMalformedError(f"session title source has unknown kind {kind!r}")


def fold_title(event: SessionEvent) -> TitleSnapshot:
    """The detached title snapshot of one ``session/title`` event.

    Checks, in order: ``data`` is an object, ``title`` is a string (kept verbatim, an
    empty string included), ``messageSeqs`` is a list of safe integers, ``source`` is one
    of the three known kinds. Any failure raises :class:`TitleMalformedError`.
    """
    if event.type != TITLE_EVENT_TYPE:
        raise ValueError(f"fold_title needs a {TITLE_EVENT_TYPE} event, got {event.type!r}")
    data = event.data
    if not isinstance(data, dict):
        raise TitleMalformedError("session title data must be an object")
    title = data.get("title")
    if not isinstance(title, str):
        raise TitleMalformedError("session title must be a string")
    seqs = data.get("messageSeqs")
    if not isinstance(seqs, list):
        raise TitleMalformedError("session title messageSeqs must be an array")
    if not all(is_safe_int(seq) for seq in seqs):
        raise TitleMalformedError("session title messageSeqs must hold safe integers")
    return TitleSnapshot(
        title=title,
        message_seqs=[int(seq) for seq in seqs],
        source=_copy_source(data.get("source")),
        event_seq=event.seq,
        updated_at=event.time,
    )
