"""One JSON Schema (draft 2020-12) per envelope: the pydantic models' own schemas, patched
with the hand-written parts (``parts``)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, Final

from pydantic import BaseModel, TypeAdapter

from indexer.model.records import (
    DeleteRecord,
    EventsRecord,
    EventStreamRecord,
    HeaderRecord,
    LifecycleRecord,
)
from indexer.settings import EVENTS_TOPIC, REQUESTS_TOPIC
from worker.contract.envelopes import CancelRequest, HttpCall, Reply, RequestRecord, ToolRequest
from worker.devtools.protocol_docs.parts import (
    DEAD_LETTER,
    FIELD_DOCS,
    REPLY_WIRE_FORM,
    SESSION_EVENT,
    SESSION_HEADER,
    Schema,
)

JSON_SCHEMA_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"


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
