"""The wire protocol, written down from the envelope models: one JSON Schema per envelope
and one AsyncAPI 3.0 document for sessionq's four topics.

The pydantic models (``indexer.model.records``, ``worker.envelopes``) are the source of
truth; this module adds what the models cannot say (field descriptions, the header and
event envelope rules that ``parse_header`` / ``check_envelope`` enforce in code, the
wire form of a reply, the dead-letter value built by ``indexer.consumer.dead_letter``).

``python -m worker.protocol_docs [--out docs] [--check]`` writes
``<out>/schemas/<name>.schema.json`` and ``<out>/asyncapi.json``. The output is
deterministic: keys in generation order, 2-space indent, UTF-8, one trailing newline.
``--check`` writes nothing and exits 1 when a committed file is stale.
"""

from __future__ import annotations

import argparse
import base64
import copy
import json
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, TypeAdapter

from indexer.model.header import MAX_SAFE_INTEGER
from indexer.model.records import (
    DeleteRecord,
    EventsRecord,
    EventStreamRecord,
    HeaderRecord,
    LifecycleRecord,
)
from indexer.settings import DLQ_TOPIC, EVENTS_TOPIC, REPLIES_TOPIC, REQUESTS_TOPIC, KafkaSettings
from worker.envelopes import CancelRequest, HttpCall, Reply, RequestRecord, ToolRequest
from worker.input import TOOL_DEFINITIONS
from worker.topics import topic_specs

SUMMARY: Final = "Write sessionq's protocol docs: JSON Schemas and an AsyncAPI 3.0 document."
JSON_SCHEMA_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"
ASYNCAPI_VERSION: Final = "3.0.0"
KAFKA_BINDING_VERSION: Final = "0.5.0"

Schema = dict[str, Any]

# ---- hand-written parts ----------------------------------------------------------------------
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
        "The value sessionq writes to the dead-letter topic (`indexer.consumer.dead_letter`) "
        "for an events record it could not parse or apply, and for a requests record that "
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
            "echoed unchanged in the reply; an object with string code and message "
            "becomes the reply's error, anything else TOOL_CANCELLED"
        ),
    },
    "Reply": {
        "id": "the request id (also the record key and the correlation_id header)",
        "ok": "true: text holds the tool output; false: error holds code and message",
        "text": "the tool output (ok replies)",
        "error": "closed-set code and model-visible message (error replies)",
        "reason": "a cancelled call's cancel reason, unchanged",
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


# ---- schemas ---------------------------------------------------------------------------------
def _model_nodes(schema: Schema) -> list[Schema]:
    """The root and every ``$defs`` entry: the nodes that describe one model each."""
    return [schema, *schema.get("$defs", {}).values()]


def _patch(schema: Schema) -> Schema:
    """Add descriptions and the rules the models leave to code, in place.

    Order: (1) drop pydantic's per-property titles (derived noise); (2) describe fields;
    (3) reference the hand-written header and event envelopes; (4) state the reply's wire
    form (``Reply.to_json``: ``v`` always, ``text`` xor ``error``).
    """
    defs: Schema = schema.setdefault("$defs", {})
    for node in list(_model_nodes(schema)):
        props: Schema = node.get("properties", {})
        for prop in props.values():
            prop.pop("title", None)
        for name, text in FIELD_DOCS.get(node.get("title", ""), {}).items():
            props[name]["description"] = text
        title = node.get("title")
        if title == "HeaderRecord":
            props["header"] = {"$ref": "#/$defs/SessionHeader", **_described(props["header"])}
            defs["SessionHeader"] = copy.deepcopy(SESSION_HEADER)
        elif title == "EventsRecord":
            props["events"]["items"] = {"$ref": "#/$defs/SessionEvent"}
            defs["SessionEvent"] = copy.deepcopy(SESSION_EVENT)
        elif title == "Reply":
            node["required"] = ["v", *node["required"]]
            node["allOf"] = [copy.deepcopy(REPLY_WIRE_FORM)]
    if not defs:
        del schema["$defs"]
    return schema


def _described(prop: Schema) -> Schema:
    return {"description": prop["description"]} if "description" in prop else {}


def _document(schema: Schema, title: str | None = None, description: str | None = None) -> Schema:
    """A standalone schema file: dialect first, then title and description, then the rest."""
    head: Schema = {"$schema": JSON_SCHEMA_DIALECT}
    head["title"] = title or schema.get("title")
    if description or "description" in schema:
        head["description"] = description or schema["description"]
    rest = {k: v for k, v in schema.items() if k not in ("title", "description")}
    return {**head, **rest}


def _model(model: type[BaseModel]) -> Schema:
    return _document(_patch(model.model_json_schema()))


def _union(tp: Any, title: str, description: str) -> Schema:
    adapter: TypeAdapter[Any] = TypeAdapter(tp)
    return _document(_patch(adapter.json_schema()), title, description)


SCHEMA_BUILDERS: Final[dict[str, Callable[[], Schema]]] = {
    "header-record": lambda: _model(HeaderRecord),
    "events-record": lambda: _model(EventsRecord),
    "lifecycle-record": lambda: _model(LifecycleRecord),
    "delete-record": lambda: _model(DeleteRecord),
    "event-stream-record": lambda: _union(
        EventStreamRecord,
        "EventStreamRecord",
        f"Any value of the {EVENTS_TOPIC} topic, discriminated by kind.",
    ),
    "tool-request": lambda: _model(ToolRequest),
    "cancel-request": lambda: _model(CancelRequest),
    "request-record": lambda: _union(
        RequestRecord,
        "RequestRecord",
        f"Any value of the {REQUESTS_TOPIC} topic, discriminated by kind.",
    ),
    "reply": lambda: _model(Reply),
    "http-call": lambda: _model(HttpCall),
    "dead-letter": lambda: _document(copy.deepcopy(DEAD_LETTER)),
}


def build_schemas() -> dict[str, Schema]:
    """Every envelope's JSON Schema (draft 2020-12), by file stem, in a fixed order."""
    return {name: build() for name, build in SCHEMA_BUILDERS.items()}


# ---- AsyncAPI --------------------------------------------------------------------------------
# message key -> (schema file, title, summary, record key description)
MESSAGES: Final[dict[str, tuple[str, str, str, str]]] = {
    "headerRecord": (
        "header-record",
        "Session header",
        "Declares a session; the first record of every session.",
        "the workspace routing key: the header's cwd, or session:<id> without one",
    ),
    "eventsRecord": (
        "events-record",
        "Session events",
        "A contiguous batch of one session's events.",
        "the session's workspace routing key (same as its header record)",
    ),
    "lifecycleRecord": (
        "lifecycle-record",
        "Session lifecycle",
        "The host opened (live) or closed the session.",
        "the session's workspace routing key (same as its header record)",
    ),
    "deleteRecord": (
        "delete-record",
        "Session delete",
        "Remove everything about a session.",
        "the session's workspace routing key (same as its header record)",
    ),
    "toolRequest": (
        "tool-request",
        "Tool request",
        "Call one session-query tool as a trusted caller session.",
        "the caller's workspace routing key: its cwd, or session:<caller id>",
    ),
    "cancelRequest": (
        "cancel-request",
        "Cancel",
        "Abort an in-flight request cooperatively.",
        "the same key as the request it cancels (same partition, same worker)",
    ),
    "reply": (
        "reply",
        "Reply",
        "Exactly one per request id; at-least-once, so hosts drop duplicates by id.",
        "the request id",
    ),
    "deadLetter": (
        "dead-letter",
        "Dead letter",
        "A record that could not be parsed or applied, with its reason and origin.",
        "the original record's key",
    ),
}

# channel key -> (topic, description, message keys)
CHANNELS: Final[dict[str, tuple[str | None, str, tuple[str, ...]]]] = {
    "events": (
        EVENTS_TOPIC,
        "Session event streams: the source of truth, kept forever. Every record of one "
        "session carries the same key, so it lands in one partition, in order. Every "
        "sessionq host reads every partition (a full replica each).",
        ("headerRecord", "eventsRecord", "lifecycleRecord", "deleteRecord"),
    ),
    "requests": (
        REQUESTS_TOPIC,
        "Tool requests and cancels. The workers of all hosts form one consumer group, so "
        "request throughput scales with worker processes up to the partition count.",
        ("toolRequest", "cancelRequest"),
    ),
    "replies": (
        None,
        f"Replies, produced to the topic named by the request's reply_to (sessionq creates "
        f"{REPLIES_TOPIC}; a host may use a topic of its own). Header correlation_id = "
        f"request id.",
        ("reply",),
    ),
    "deadLetters": (
        DLQ_TOPIC,
        "Records sessionq could not parse or apply (events and requests).",
        ("deadLetter",),
    ),
}

# operation key -> (action, channel, messages, tag, summary, replies)
OPERATIONS: Final[dict[str, tuple[str, str, tuple[str, ...], str, str, bool]]] = {
    "hostPublishEvents": (
        "send",
        "events",
        ("headerRecord", "eventsRecord", "lifecycleRecord", "deleteRecord"),
        "host",
        "A host publishes its sessions: header first, then events batches in seq order.",
        False,
    ),
    "hostCallTool": (
        "send",
        "requests",
        ("toolRequest",),
        "host",
        "A host calls a tool and awaits the one reply on its reply_to topic.",
        True,
    ),
    "hostCancelToolCall": (
        "send",
        "requests",
        ("cancelRequest",),
        "host",
        "A host aborts a call it no longer waits for.",
        False,
    ),
    "sessionqIndexEvents": (
        "receive",
        "events",
        ("headerRecord", "eventsRecord", "lifecycleRecord", "deleteRecord"),
        "sessionq",
        "The indexer of every sessionq host applies every record idempotently.",
        False,
    ),
    "sessionqAnswerToolCall": (
        "receive",
        "requests",
        ("toolRequest",),
        "sessionq",
        "A worker answers each request with exactly one reply to its reply_to topic.",
        True,
    ),
    "sessionqReceiveCancel": (
        "receive",
        "requests",
        ("cancelRequest",),
        "sessionq",
        "The worker running the request aborts it; its reply echoes the reason.",
        False,
    ),
    "sessionqDeadLetter": (
        "send",
        "deadLetters",
        ("deadLetter",),
        "sessionq",
        "Unparseable or inapplicable records go to the dead-letter topic.",
        False,
    ),
}

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


def _hoist(schema: Schema, into: Schema) -> Schema:
    """A copy of ``schema`` whose ``$defs`` move into ``into`` (``components.schemas``),
    every ``#/$defs/`` ref pointing there.

    A shared definition (``CallerRef``, ``SessionHeader``...) must be identical wherever
    it appears; two different bodies under one name are a bug in this module.
    """
    body: Schema = _rewrite_refs(schema)
    for name, definition in body.pop("$defs", {}).items():
        if name in into and into[name] != definition:
            raise ValueError(f"two different schemas named {name}")
        into[name] = definition
    body.pop("$schema", None)
    return body


def _rewrite_refs(node: Any) -> Any:
    """A deep copy of ``node`` with ``#/$defs/X`` refs as ``#/components/schemas/X``."""
    if isinstance(node, dict):
        out: Schema = {}
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str) and v.startswith("#/$defs/"):
                out[k] = "#/components/schemas/" + v.removeprefix("#/$defs/")
            else:
                out[k] = _rewrite_refs(v)
        return out
    if isinstance(node, list):
        return [_rewrite_refs(v) for v in node]
    return node


def _channel_bindings(topic: str | None) -> Schema:
    kafka = KafkaSettings(
        bootstrap="localhost:9092",
        events_topic=EVENTS_TOPIC,
        requests_topic=REQUESTS_TOPIC,
        replies_topic=REPLIES_TOPIC,
        dlq_topic=DLQ_TOPIC,
    )
    specs = {name: cfg for name, _, cfg in topic_specs(kafka, 1)}
    cfg = specs[topic if topic is not None else REPLIES_TOPIC]
    config: Schema = {}
    for key, value in cfg.items():
        config[key] = value.split(",") if key == "cleanup.policy" else int(value)
    return {"kafka": {"topicConfiguration": config, "bindingVersion": KAFKA_BINDING_VERSION}}


def _message(key: str, schemas: dict[str, Schema], components: Schema) -> Schema:
    stem, title, summary, key_doc = MESSAGES[key]
    payload = _hoist(schemas[stem], components)
    name = payload.get("title", title)
    components[name] = payload
    message: Schema = {
        "name": name,
        "title": title,
        "summary": summary,
        "contentType": "application/json",
    }
    if key == "reply":
        message["headers"] = {
            "type": "object",
            "required": ["correlation_id"],
            "properties": {
                "correlation_id": {"type": "string", "description": "the request id, UTF-8"}
            },
        }
        message["correlationId"] = {"location": "$message.header#/correlation_id"}
    elif key in ("toolRequest", "cancelRequest"):
        message["correlationId"] = {"location": "$message.payload#/id"}
    message["payload"] = {"$ref": f"#/components/schemas/{name}"}
    message["bindings"] = {
        "kafka": {
            "key": {"type": "string", "description": key_doc},
            "bindingVersion": KAFKA_BINDING_VERSION,
        }
    }
    message["examples"] = copy.deepcopy(EXAMPLES[key])
    return message


def _tool_argument_schemas() -> Schema:
    return {
        f"{d['name']}.arguments": {
            "description": f"arguments of {d['name']}: {d['description']}",
            **copy.deepcopy(d["parameters"]),
        }
        for d in TOOL_DEFINITIONS
    }


def _version() -> str:
    try:
        return metadata.version("sessionq")
    except metadata.PackageNotFoundError:
        return "0.0.0"


def build_asyncapi(schemas: dict[str, Schema] | None = None) -> Schema:
    """The AsyncAPI 3.0 document: servers, the four channels, both parties' operations.

    Operations are written from each party's side and tagged ``host`` or ``sessionq``;
    the reply of a tool call goes to the address the request names (``reply_to``).
    """
    schemas = build_schemas() if schemas is None else schemas
    component_schemas: Schema = {}
    messages = {key: _message(key, schemas, component_schemas) for key in MESSAGES}
    component_schemas.update(_tool_argument_schemas())
    channels: Schema = {}
    for key, (topic, description, keys) in CHANNELS.items():
        channels[key] = {
            "address": topic,
            "description": description,
            "messages": {m: {"$ref": f"#/components/messages/{m}"} for m in keys},
            "bindings": _channel_bindings(topic),
        }
    operations: Schema = {}
    for op, (action, channel, keys, tag, summary, replies) in OPERATIONS.items():
        operation: Schema = {
            "action": action,
            "channel": {"$ref": f"#/channels/{channel}"},
            "summary": summary,
            "tags": [{"$ref": f"#/components/tags/{tag}"}],
            "messages": [{"$ref": f"#/channels/{channel}/messages/{m}"} for m in keys],
        }
        if replies:
            operation["reply"] = {
                "address": {
                    "location": "$message.payload#/reply_to",
                    "description": "the topic the request names",
                },
                "channel": {"$ref": "#/channels/replies"},
                "messages": [{"$ref": "#/channels/replies/messages/reply"}],
            }
        operations[op] = operation
    return {
        "asyncapi": ASYNCAPI_VERSION,
        "info": {
            "title": "sessionq",
            "version": _version(),
            "description": (
                "Event-sourced search and exact reads over AI-agent session history. Agent "
                "hosts publish session event streams and call five session-query tools over "
                "Kafka request/reply. Operations tagged `host` are an agent host's side, "
                'those tagged `sessionq` the service\'s. Every value is JSON with "v": 1. '
                "See docs/host-integration.md."
            ),
            "license": {"name": "MIT"},
        },
        "defaultContentType": "application/json",
        "servers": {
            "kafka": {
                "host": "{bootstrap}",
                "protocol": "kafka",
                "description": "the Kafka cluster sessionq and the hosts share",
                "variables": {
                    "bootstrap": {
                        "default": "localhost:9092",
                        "description": "bootstrap address host:port",
                    }
                },
            }
        },
        "channels": channels,
        "operations": operations,
        "components": {
            "schemas": component_schemas,
            "messages": messages,
            "tags": {
                "host": {"name": "host", "description": "an agent host (the client side)"},
                "sessionq": {"name": "sessionq", "description": "the sessionq service"},
            },
        },
    }


# ---- files -----------------------------------------------------------------------------------
def render(doc: Schema) -> str:
    """The byte-stable text of one document."""
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def build_files() -> dict[str, str]:
    """Relative path -> file text, for everything ``main`` writes."""
    schemas = build_schemas()
    files = {f"schemas/{name}.schema.json": render(s) for name, s in schemas.items()}
    files["asyncapi.json"] = render(build_asyncapi(schemas))
    return files


def stale_files(out: Path) -> list[str]:
    """Generated files that are missing or differ under ``out``, plus stray schema files."""
    files = build_files()
    stale = [
        rel
        for rel, text in files.items()
        if not (out / rel).is_file() or (out / rel).read_text(encoding="utf-8") != text
    ]
    schema_dir = out / "schemas"
    if schema_dir.is_dir():
        stale += sorted(
            f"schemas/{p.name}"
            for p in schema_dir.glob("*.schema.json")
            if f"schemas/{p.name}" not in files
        )
    return stale


def write_files(out: Path) -> list[str]:
    """Write every generated file, remove stray ``*.schema.json``; return what changed."""
    changed = stale_files(out)
    files = build_files()
    for rel in changed:
        path = out / rel
        if rel in files:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(files[rel], encoding="utf-8")
        else:
            path.unlink()
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m worker.protocol_docs", description=SUMMARY)
    parser.add_argument("--out", type=Path, default=Path("docs"), help="output dir (docs)")
    parser.add_argument("--check", action="store_true", help="only report stale files")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_files(args.out)
        for rel in stale:
            print(f"stale: {args.out / rel}", file=sys.stderr)
        return 1 if stale else 0
    for rel in write_files(args.out):
        print(f"wrote {args.out / rel}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
