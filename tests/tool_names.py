"""The unknown-tool message every transport shows (``worker.contract.errors.unknown_tool``),
written out here so a test fails if the wording changes."""

from __future__ import annotations


def unknown_tool_message(shown: str) -> str:
    """``shown``: the JSON-quoted name, or ``(not a string)``."""
    return (
        f"invalid arguments: unknown session query tool {shown}; known tools: session_search,"
        " session_event_search, session_trace, session_event_trace, session_event_read"
    )
