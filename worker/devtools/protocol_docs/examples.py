"""The example messages of the AsyncAPI document, one list per message key."""

from __future__ import annotations

import base64
import json
from typing import Final

from indexer.settings import EVENTS_TOPIC, REPLIES_TOPIC
from worker.devtools.protocol_docs.parts import Schema

BASE_TIME: Final = 1784851200000  # 2026-07-24T00:00:00.000Z
EXAMPLE_SESSION: Final = "3f0c6a52-5d0e-4c41-9a57-0c1f3d2b7e10"
EXAMPLE_REQUEST: Final = "a6b1f0de-2f49-4f3e-8d7c-6f1b2c3d4e5f"
EXAMPLE_CWD: Final = "/home/ana/src/shop"
GAP_VALUE: Final = json.dumps(
    {
        "v": 1,
        "kind": "events",
        "session_id": EXAMPLE_SESSION,
        "events": [{"type": "step/end", "seq": 7, "time": BASE_TIME + 9000, "data": {}}],
    },
    separators=(",", ":"),
).encode()

EXAMPLES: Final[dict[str, list[Schema]]] = {
    "headerRecord": [
        {
            "name": "header",
            "payload": {
                "v": 1,
                "kind": "header",
                "header": {
                    "version": 0,
                    "id": EXAMPLE_SESSION,
                    "createdAt": BASE_TIME,
                    "cwd": EXAMPLE_CWD,
                    "delegationDepth": 0,
                },
            },
        }
    ],
    "eventsRecord": [
        {
            "name": "firstBatch",
            "payload": {
                "v": 1,
                "kind": "events",
                "session_id": EXAMPLE_SESSION,
                "events": [
                    {"type": "turn/start", "seq": 0, "time": BASE_TIME, "data": {"turn": 1}},
                    {
                        "type": "user/message",
                        "seq": 1,
                        "time": BASE_TIME + 1000,
                        "data": {
                            "content": [{"type": "text", "text": "why does checkout time out?"}],
                            "source": {"kind": "user"},
                            "role": "user",
                            "id": "u-1",
                        },
                        "surfaceOp": "append",
                    },
                    {
                        "type": "step/start",
                        "seq": 2,
                        "time": BASE_TIME + 2000,
                        "data": {"turn": 1, "step": 1},
                    },
                    {
                        "type": "assistant/message",
                        "seq": 3,
                        "time": BASE_TIME + 3000,
                        "data": {
                            "turn": 1,
                            "step": 1,
                            "message": {
                                "role": "assistant",
                                "content": [
                                    {"type": "text", "text": "The payment client has no timeout."}
                                ],
                                "source": {"kind": "model", "provider": "p", "model": "m"},
                                "id": "a-3",
                            },
                        },
                        "surfaceOp": "append",
                    },
                ],
            },
        }
    ],
    "lifecycleRecord": [
        {
            "name": "opened",
            "payload": {"v": 1, "kind": "lifecycle", "session_id": EXAMPLE_SESSION, "live": True},
        }
    ],
    "deleteRecord": [
        {
            "name": "delete",
            "payload": {"v": 1, "kind": "delete", "session_id": EXAMPLE_SESSION},
        }
    ],
    "toolRequest": [
        {
            "name": "sessionSearch",
            "payload": {
                "v": 1,
                "kind": "request",
                "id": EXAMPLE_REQUEST,
                "reply_to": REPLIES_TOPIC,
                "tool": "session_search",
                "arguments": {"query": "checkout timeout"},
                "caller": {"session_id": EXAMPLE_SESSION, "step_seq": 2, "min_seq": 3},
                "timeout_ms": 30000,
            },
        }
    ],
    "cancelRequest": [
        {
            "name": "userAbort",
            "payload": {
                "v": 1,
                "kind": "cancel",
                "id": EXAMPLE_REQUEST,
                "reason": {
                    "code": "SESSION_QUERY_ABORTED",
                    "message": "session query was cancelled",
                },
            },
        }
    ],
    "reply": [
        {
            "name": "ok",
            "headers": {"correlation_id": EXAMPLE_REQUEST},
            "payload": {
                "v": 1,
                "id": EXAMPLE_REQUEST,
                "ok": True,
                "text": "No prior session matches found.",
            },
        },
        {
            "name": "timeout",
            "headers": {"correlation_id": EXAMPLE_REQUEST},
            "payload": {
                "v": 1,
                "id": EXAMPLE_REQUEST,
                "ok": False,
                "error": {"code": "TOOL_TIMEOUT", "message": "tool call timed out after 30000ms"},
            },
        },
        {
            "name": "cancelled",
            "headers": {"correlation_id": EXAMPLE_REQUEST},
            "payload": {
                "v": 1,
                "id": EXAMPLE_REQUEST,
                "ok": False,
                "error": {
                    "code": "SESSION_QUERY_ABORTED",
                    "message": "session query was cancelled",
                },
                "reason": {
                    "code": "SESSION_QUERY_ABORTED",
                    "message": "session query was cancelled",
                },
            },
        },
    ],
    "deadLetter": [
        {
            "name": "seqGap",
            "payload": {
                "v": 1,
                "reason": "session event seq 7 is not contiguous; expected 4",
                "code": "SESSIONQ_SEQ_GAP",
                "source": {
                    "topic": EVENTS_TOPIC,
                    "partition": 2,
                    "offset": 1841,
                    "timestamp": BASE_TIME + 9000,
                },
                "key_b64": base64.b64encode(EXAMPLE_CWD.encode()).decode(),
                "value_b64": base64.b64encode(GAP_VALUE).decode(),
                "value_truncated": False,
                "value_size": len(GAP_VALUE),
            },
        }
    ],
}
