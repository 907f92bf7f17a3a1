"""The hand-written parts of the protocol docs: what the envelope models cannot say.

The header and event envelope rules that ``parse_header`` / ``check_envelope`` enforce in
code, the dead-letter value built by ``indexer.kafka.dead_letter.dead_letter``, field
descriptions by model title and the wire form of a reply (``Reply.to_json``).
"""

from __future__ import annotations

from typing import Any, Final

from indexer.model.header import MAX_SAFE_INTEGER

Schema = dict[str, Any]

SESSION_HEADER: Final[Schema] = {
    "title": "SessionHeader",
    "description": (
        "A session's immutable identity (SPEC §1.1), as `parse_header` accepts it. A later "
        "header record for the same id must agree on version, id, createdAt, cwd, "
        "parentSession, seedLength and delegationDepth (absent = 0), else it is "
        "dead-lettered with SESSION_QUERY_SOURCE_CONFLICT."
    ),
    "type": "object",
    "additionalProperties": False,
    "required": ["id", "createdAt"],
    "properties": {
        "type": {"const": "session", "description": "optional tag (line 1 of a log file)"},
        "version": {"const": 0, "description": "format version; absent reads as 0"},
        "id": {"type": "string", "description": "the session id (opaque)"},
        "createdAt": {
            "type": "integer",
            "minimum": 0,
            "maximum": MAX_SAFE_INTEGER,
            "description": "creation time, epoch milliseconds",
        },
        "cwd": {
            "type": "string",
            "pattern": "^/",
            "description": (
                "absolute workspace directory; absent = no workspace. It is the routing key "
                "of every record of the session and the authorization boundary."
            ),
        },
        "parentSession": {"type": "string", "description": "lineage parent (forked from)"},
        "seedLength": {"type": "integer", "minimum": 0, "maximum": MAX_SAFE_INTEGER},
        "origin": {"const": "subagent"},
        "delegationDepth": {"type": "integer", "minimum": 0, "maximum": MAX_SAFE_INTEGER},
        "agentPreset": {"type": "string"},
        "sourceAgent": {
            "type": "string",
            "minLength": 1,
            "description": (
                'the agent whose log the session was imported from ("claude-code", "codex");'
                " absent = a dsh session (docs/importers.md)"
            ),
        },
    },
}

SESSION_EVENT: Final[Schema] = {
    "title": "SessionEvent",
    "description": (
        "One event of a session log (SPEC §1.2), as `check_envelope` accepts it. seq is "
        "zero-based and contiguous per session; the object is stored and read back "
        "byte-for-byte in its key order (type, seq, time, data, sourceEventSeqs?, "
        "surfaceOp?)."
    ),
    "type": "object",
    "additionalProperties": False,
    "required": ["type", "seq", "time", "data"],
    "properties": {
        "type": {"type": "string", "description": 'event type, e.g. "user/message"'},
        "seq": {"type": "integer", "minimum": 0, "maximum": MAX_SAFE_INTEGER},
        "time": {
            "type": "integer",
            "minimum": -MAX_SAFE_INTEGER,
            "maximum": MAX_SAFE_INTEGER,
            "description": "epoch milliseconds",
        },
        "data": {"description": "type-specific payload (SPEC §1.3); may be {}"},
        "ignorable": {"const": True},
        "surfaceOp": {
            "description": "only on user/message, assistant/message, tool/result",
            "anyOf": [
                {"const": "append"},
                {
                    "type": "object",
                    "required": ["op", "start", "end"],
                    "properties": {
                        "op": {"const": "replace"},
                        "start": {"type": "integer", "minimum": 0},
                        "end": {"type": "integer", "minimum": 0},
                    },
                },
            ],
        },
        "sourceEventSeqs": {
            "type": "array",
            "items": {"type": "integer", "minimum": 0},
            "description": "only on surface-eligible types",
        },
    },
}

DEAD_LETTER: Final[Schema] = {
    "title": "DeadLetter",
    "description": (
        "The value sessionq writes to the dead-letter topic "
        "(`indexer.kafka.dead_letter.dead_letter`) for an events record it could not parse or "
        "apply, and for a requests record that "
        "names no usable id and reply topic. The record key is the original record's key."
    ),
    "type": "object",
    "additionalProperties": False,
    "required": [
        "v",
        "reason",
        "code",
        "source",
        "key_b64",
        "value_b64",
        "value_truncated",
        "value_size",
    ],
    "properties": {
        "v": {"const": 1},
        "reason": {"type": "string", "description": "what is wrong, for a human"},
        "code": {
            "type": "string",
            "description": "machine-readable cause (open set)",
            "examples": [
                "SESSIONQ_INVALID_RECORD",
                "SESSIONQ_RECORD_REJECTED",
                "SESSIONQ_UNKNOWN_SESSION",
                "SESSIONQ_SEQ_GAP",
                "SESSIONQ_SEQ_CONFLICT",
                "SESSION_QUERY_SOURCE_CONFLICT",
                "SESSION_QUERY_INVALID_SURFACE",
                "SESSIONQ_INVALID_REQUEST",
                "SESSIONQ_REPLY_FAILED",
                "SESSIONQ_REPLY_TOPIC_REFUSED",
                "SESSIONQ_INTERNAL",
            ],
        },
        "source": {
            "type": "object",
            "additionalProperties": False,
            "required": ["topic", "partition", "offset", "timestamp"],
            "properties": {
                "topic": {"type": "string"},
                "partition": {"type": "integer", "minimum": 0},
                "offset": {"type": "integer", "minimum": 0},
                "timestamp": {"type": "integer", "description": "record timestamp, epoch ms"},
            },
        },
        "key_b64": {
            "type": ["string", "null"],
            "contentEncoding": "base64",
            "description": "the original key, base64 (null: no key)",
        },
        "value_b64": {
            "type": ["string", "null"],
            "contentEncoding": "base64",
            "description": "the original value bytes, base64 (null: no value, or the DLQ "
            "refused even the dead letter, which is then resent without them)",
        },
        "value_truncated": {
            "type": "boolean",
            "description": "true when value_b64 holds only the first 9 MiB of the value",
        },
        "value_size": {
            "type": ["integer", "null"],
            "minimum": 0,
            "description": "size of the original value in bytes (null: no value)",
        },
    },
}

# Field descriptions the models do not carry, by model title.
FIELD_DOCS: Final[dict[str, dict[str, str]]] = {
    "HeaderRecord": {
        "v": "envelope version",
        "header": "the session header; must precede the session's events records",
    },
    "EventsRecord": {
        "session_id": "the session the events belong to (its header came first)",
        "events": (
            "contiguous events; the first seq is the session's next expected seq. A "
            "re-delivered identical prefix is dropped; a gap is dead-lettered "
            "(SESSIONQ_SEQ_GAP) and holds the session until the missing events arrive"
        ),
    },
    "LifecycleRecord": {"live": "true while the host has the session open"},
    "DeleteRecord": {"session_id": "remove the session's header, events and documents"},
    "ToolRequest": {
        "id": "request id (a UUID); the reply carries it, cancels name it",
        "reply_to": "topic the reply is produced to (default sessionq.replies)",
        "tool": (
            "session_search, session_event_search, session_trace, session_event_trace or "
            "session_event_read; any other name is answered with INVALID_ARGS"
        ),
        "arguments": "the model's tool arguments, validated against the tool's schema",
        "caller": "the trusted caller, set by the host, never by the model",
        "timeout_ms": (
            "deadline = record timestamp + timeout_ms, capped by the worker's configuration"
        ),
    },
    "HttpCall": {
        "id": "optional request id; one is generated when absent",
        "tool": "the tool to call (unknown names: HTTP 404 UNKNOWN_TOOL)",
        "arguments": "the model's tool arguments, validated against the tool's schema",
        "caller": "the trusted caller",
        "timeout_ms": "deadline = receipt time + timeout_ms, capped by the configuration",
    },
    "CallerRef": {
        "session_id": "the calling session (required by every tool)",
        "step_seq": "seq of the caller's current step/start: event search stops before it",
        "min_seq": "answer only after the caller's log is applied through this seq",
    },
    "CancelRequest": {
        "id": "id of the request to abort",
        "reason": (
            "echoed in the reply, unchanged up to 1024 bytes of JSON (a longer string "
            "keeps a prefix, anything else longer becomes a fixed marker); an object with "
            "string code and message becomes the reply's error, anything else TOOL_CANCELLED"
        ),
    },
    "Reply": {
        "id": "the request id (also the record key and the correlation_id header)",
        "ok": "true: text holds the tool output; false: error holds code and message",
        "text": "the tool output (ok replies)",
        "error": "closed-set code and model-visible message (error replies)",
        "reason": "a cancelled call's cancel reason (bounded to 1024 bytes of JSON)",
    },
    "ReplyError": {
        "code": "INVALID_ARGS, TOOL_TIMEOUT, TOOL_CANCELLED, SESSION_QUERY_* (SPEC §9.11)",
        "message": "the model-visible message; the model sees 'Error: <message>'",
    },
}

REPLY_WIRE_FORM: Final[Schema] = {
    "if": {"properties": {"ok": {"const": True}}},
    "then": {
        "required": ["text"],
        "properties": {"text": {"type": "string"}},
        "not": {"anyOf": [{"required": ["error"]}, {"required": ["reason"]}]},
    },
    "else": {
        "required": ["error"],
        "properties": {"error": {"$ref": "#/$defs/ReplyError"}},
        "not": {"required": ["text"]},
    },
}
