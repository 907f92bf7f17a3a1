"""The message shapes of SPEC §1.3 that a reader relies on (§8.3 step 5).

The rule belongs to the event model, not to one reader: ``session_event_read`` refuses
a window holding a message event that breaks it (``indexer.query.events``), and the
importers (``indexer.logs.importers.common``) check every event they make against it,
so an imported file whose mapping would break it is rejected at import with its line
instead of being stored unreadable. dsh logs are stored as written (an older dsh shape
is read as deliberate difference 9 allows).
"""

from __future__ import annotations

from typing import Any

from indexer.errors import SessionqError
from indexer.model.event import SessionEvent

__all__ = ["EventShapeError", "check_message_shape"]


class EventShapeError(SessionqError):
    """A stored message event whose shape a reader cannot trust (SPEC §8.3 step 5).

    Not a ``SessionQueryError`` on purpose: the tool boundary shows it as the generic
    SESSION_QUERY_TOOL_FAILED.
    """


def _nonempty_str(v: Any) -> bool:
    return isinstance(v, str) and v != ""


def check_message_shape(event: SessionEvent) -> None:
    """SPEC §8.3 step 5, reading the older message shapes of deliberate difference 9.

    Current-shape events must be fully identified; an older-shape event (content directly
    in ``data``) only needs its content to be a list.
    """
    where = f"session event at seq {event.seq}"
    data = event.data
    if event.type not in ("user/message", "assistant/message", "tool/result"):
        return
    if not isinstance(data, dict):
        raise EventShapeError(f"{where} lacks an identified message")
    if event.type == "user/message":
        msg: Any = data
        if "id" not in msg and "role" not in msg:
            if not isinstance(msg.get("content"), list):
                raise EventShapeError(f"{where} message content must be an array")
            return
    else:
        if "message" not in data:
            if not isinstance(data.get("content"), list):
                raise EventShapeError(f"{where} lacks an identified message")
            return
        msg = data["message"]
    if not isinstance(msg, dict) or not _nonempty_str(msg.get("id")):
        raise EventShapeError(f"{where} lacks an identified message")
    role = "assistant" if event.type == "assistant/message" else "user"
    if msg.get("role") != role:
        raise EventShapeError(f'{where} message role must be "{role}"')
    source = msg.get("source")
    if not isinstance(source, dict) or not _nonempty_str(source.get("kind")):
        raise EventShapeError(f"{where} message source kind must be a non-empty string")
    content = msg.get("content")
    if not isinstance(content, list):
        raise EventShapeError(f"{where} message content must be an array")
    if event.type == "assistant/message":
        if source.get("kind") != "model" or not (
            _nonempty_str(source.get("provider")) and _nonempty_str(source.get("model"))
        ):
            raise EventShapeError(f"{where} assistant message must have a model source")
    elif event.type == "tool/result":
        call_id = source.get("callId")
        if source.get("kind") != "tool" or not _nonempty_str(call_id):
            raise EventShapeError(f"{where} tool result must have a tool source")
        if (
            len(content) != 1
            or not isinstance(content[0], dict)
            or content[0].get("type") != "tool-result"
            or not isinstance(content[0].get("content"), list)
            or content[0].get("toolCallId") != call_id
        ):
            raise EventShapeError(f"{where} message must contain one tool-result block")
