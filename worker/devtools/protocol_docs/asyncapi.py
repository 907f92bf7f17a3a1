"""The AsyncAPI 3.0 document for sessionq's four topics: servers, channels, both parties'
operations, with the envelope schemas hoisted into ``components.schemas``."""

from __future__ import annotations

import copy
from importlib import metadata
from typing import Any, Final

from indexer.settings import DLQ_TOPIC, EVENTS_TOPIC, REPLIES_TOPIC, REQUESTS_TOPIC, KafkaSettings
from worker.contract.arguments import TOOL_DEFINITIONS
from worker.devtools.protocol_docs.examples import EXAMPLES
from worker.devtools.protocol_docs.parts import Schema
from worker.devtools.protocol_docs.schemas import build_schemas
from worker.host.topics import topic_specs

ASYNCAPI_VERSION: Final = "3.0.0"
KAFKA_BINDING_VERSION: Final = "0.5.0"

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
        "Session event streams: the source of truth, kept --events-retention-days (30 by "
        "default; new replicas start from a snapshot). Every record of one "
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


# The topic settings the AsyncAPI Kafka binding's topicConfiguration can state.
BINDING_CONFIG_KEYS = frozenset(
    {
        "cleanup.policy",
        "retention.ms",
        "retention.bytes",
        "delete.retention.ms",
        "max.message.bytes",
    }
)


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
        if key not in BINDING_CONFIG_KEYS:  # e.g. segment.ms: not in the binding's schema
            continue
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
