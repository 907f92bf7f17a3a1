"""The protocol docs (docs/schemas, docs/asyncapi.json) are current, valid, and true.

"Current": regenerating them in memory gives the committed bytes. "Valid": every schema
is a draft 2020-12 schema and the AsyncAPI document's references resolve. "True": the
examples validate against the schemas, the pydantic models accept them, the event
examples apply to a real store, and the reply examples are what sessionq answers to the
request and cancel examples.
"""

from __future__ import annotations

import base64
import copy
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from jsonschema import Draft202012Validator

from indexer.errors import RecordRejectedError
from indexer.kafka.client import InRecord
from indexer.kafka.dead_letter import dead_letter
from indexer.logs.envelope import ENVELOPE_KEYS
from indexer.metrics import Metrics
from indexer.model.header import SessionHeader
from indexer.model.records import decode_record
from indexer.query.service import StoreQueryService
from indexer.settings import DLQ_TOPIC, EVENTS_TOPIC, REPLIES_TOPIC, REQUESTS_TOPIC
from indexer.store.records.store import Store
from worker.calls.pipeline import Pipeline
from worker.calls.tool_call import ToolCall
from worker.contract.envelopes import (
    CancelRequest,
    EnvelopeError,
    HttpCall,
    Reply,
    ToolRequest,
    decode_reply,
    decode_request,
    reply_for,
)
from worker.devtools.protocol_docs import (
    DEAD_LETTER,
    SESSION_EVENT,
    SESSION_HEADER,
    build_asyncapi,
    build_files,
    build_schemas,
    main,
    render,
    stale_files,
)

DOCS = Path(__file__).resolve().parents[2] / "docs"
Schema = dict[str, Any]


@pytest.fixture(scope="module")
def schemas() -> dict[str, Schema]:
    return build_schemas()


@pytest.fixture(scope="module")
def asyncapi() -> Schema:
    return build_asyncapi()


def validator(schema: Schema) -> Draft202012Validator:
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


def examples(doc: Schema, message: str) -> list[Schema]:
    found: list[Schema] = doc["components"]["messages"][message]["examples"]
    return found


def payload(doc: Schema, message: str, name: str) -> Any:
    return next(e["payload"] for e in examples(doc, message) if e["name"] == name)


def refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from refs(value)


def resolve(doc: Schema, ref: str) -> Any:
    assert ref.startswith("#/"), ref
    node: Any = doc
    for part in ref[2:].split("/"):
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


# ---- current and deterministic ---------------------------------------------------------------
def test_committed_docs_are_current() -> None:
    stale = stale_files(DOCS)
    assert not stale, f"stale protocol docs {stale}: run `python -m worker.devtools.protocol_docs`"


def test_generation_is_deterministic_json_with_two_space_indent() -> None:
    first, second = build_files(), build_files()
    assert first == second
    for rel, text in first.items():
        assert text.endswith("}\n") and not text.endswith("\n\n"), rel
        assert text.splitlines()[1].startswith('  "'), rel
        assert render(json.loads(text)) == text, rel


def test_main_writes_checks_and_removes_strays(tmp_path: Path) -> None:
    assert main(["--out", str(tmp_path), "--check"]) == 1
    assert main(["--out", str(tmp_path)]) == 0
    assert main(["--out", str(tmp_path), "--check"]) == 0
    stray = tmp_path / "schemas" / "gone.schema.json"
    stray.write_text("{}\n")
    (tmp_path / "asyncapi.json").write_text("{}\n")
    assert sorted(stale_files(tmp_path)) == ["asyncapi.json", "schemas/gone.schema.json"]
    assert main(["--out", str(tmp_path)]) == 0
    assert not stray.exists() and stale_files(tmp_path) == []


# ---- schemas ---------------------------------------------------------------------------------
def test_every_schema_is_a_valid_draft_2020_12_schema(schemas: dict[str, Schema]) -> None:
    assert set(schemas) == {
        "header-record",
        "events-record",
        "lifecycle-record",
        "delete-record",
        "event-stream-record",
        "tool-request",
        "cancel-request",
        "request-record",
        "reply",
        "http-call",
        "dead-letter",
    }
    for name, schema in schemas.items():
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema", name
        assert schema["title"], name
        Draft202012Validator.check_schema(schema)
        for ref in refs(schema):
            resolve(schema, ref)


def test_hand_written_header_schema_covers_the_header_model() -> None:
    aliases = {f.alias or name for name, f in SessionHeader.model_fields.items()}
    assert set(SESSION_HEADER["properties"]) == aliases | {"type"}


def test_hand_written_event_schema_covers_the_envelope_keys() -> None:
    assert set(SESSION_EVENT["properties"]) == ENVELOPE_KEYS


def test_dead_letter_schema_describes_dead_letter_values() -> None:
    check = validator(DEAD_LETTER)
    for key, value in [(b"/work", b'{"v":1}'), (None, None), (b"\xff", b"\x00\x01")]:
        record = InRecord(EVENTS_TOPIC, 3, 42, key, value, 1784851200000)
        built = orjson.loads(dead_letter(record, "why", "SESSIONQ_SEQ_GAP"))
        check.validate(built)
        assert set(built) == set(DEAD_LETTER["required"])
        if value is not None:
            assert base64.b64decode(built["value_b64"]) == value


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ("reply", {"v": 1, "id": "r", "ok": True}),  # ok without text
        ("reply", {"v": 1, "id": "r", "ok": True, "text": "", "error": None}),
        ("reply", {"v": 1, "id": "r", "ok": False, "text": "x"}),
        ("reply", {"id": "r", "ok": True, "text": ""}),  # the wire always has v
        ("events-record", {"v": 1, "kind": "events", "session_id": "s", "events": []}),
        ("events-record", {"v": 1, "kind": "events", "session_id": "s", "events": [{"seq": 0}]}),
        ("header-record", {"v": 1, "kind": "header", "header": {"id": "s", "createdAt": -1}}),
        (
            "header-record",
            {"v": 1, "kind": "header", "header": {"id": "s", "createdAt": 0, "cwd": "rel"}},
        ),
        ("tool-request", {"v": 1, "kind": "request", "id": "r", "tool": "session_search"}),
        ("tool-request", {"v": 2, "kind": "request", "id": "r", "reply_to": "t", "tool": "x"}),
        ("cancel-request", {"v": 1, "kind": "cancel", "id": ""}),
        ("event-stream-record", {"v": 1, "kind": "rename", "session_id": "s"}),
        ("request-record", {"v": 1, "kind": "reply", "id": "r"}),
    ],
)
def test_schemas_reject_what_sessionq_rejects_or_never_sends(
    schemas: dict[str, Schema], schema: str, value: Any
) -> None:
    assert not validator(schemas[schema]).is_valid(value)


def test_models_reject_the_envelope_level_counterexamples() -> None:
    with pytest.raises(RecordRejectedError):
        decode_record(b'{"v":1,"kind":"events","session_id":"s","events":[]}')
    with pytest.raises(EnvelopeError):
        decode_request(b'{"v":1,"kind":"cancel","id":""}')


# ---- AsyncAPI --------------------------------------------------------------------------------
def test_asyncapi_document_shape(asyncapi: Schema) -> None:
    assert asyncapi["asyncapi"] == "3.0.0"
    assert asyncapi["defaultContentType"] == "application/json"
    addresses = {k: c["address"] for k, c in asyncapi["channels"].items()}
    assert addresses == {
        "events": EVENTS_TOPIC,
        "requests": REQUESTS_TOPIC,
        "replies": None,  # the request's reply_to; REPLIES_TOPIC by default
        "deadLetters": DLQ_TOPIC,
    }
    assert REPLIES_TOPIC in asyncapi["channels"]["replies"]["description"]
    events_config = asyncapi["channels"]["events"]["bindings"]["kafka"]["topicConfiguration"]
    # finite (issue 11: erased data leaves Kafka), unbounded in bytes
    assert events_config["retention.ms"] == 30 * 24 * 3600 * 1000
    assert events_config["retention.bytes"] == -1


def test_every_asyncapi_reference_resolves(asyncapi: Schema) -> None:
    found = list(refs(asyncapi))
    assert len(found) > 30
    for ref in found:
        resolve(asyncapi, ref)


def test_operations_use_their_channels_messages(asyncapi: Schema) -> None:
    tags = set()
    for name, op in asyncapi["operations"].items():
        assert op["action"] in ("send", "receive"), name
        channel = op["channel"]["$ref"]
        for message in op["messages"]:
            assert message["$ref"].startswith(channel + "/messages/"), name
        if "reply" in op:
            assert op["reply"]["address"]["location"] == "$message.payload#/reply_to"
            assert op["reply"]["channel"]["$ref"] == "#/channels/replies"
        tags |= {t["$ref"] for t in op["tags"]}
    assert tags == {"#/components/tags/host", "#/components/tags/sessionq"}


def test_messages_carry_their_keys_and_the_reply_its_correlation_header(asyncapi: Schema) -> None:
    messages = asyncapi["components"]["messages"]
    for name, message in messages.items():
        assert message["bindings"]["kafka"]["key"]["type"] == "string", name
        assert message["examples"], name
    reply = messages["reply"]
    assert reply["headers"]["required"] == ["correlation_id"]
    assert reply["correlationId"]["location"] == "$message.header#/correlation_id"


def test_tool_argument_schemas_are_the_tool_definitions(asyncapi: Schema) -> None:
    from worker.contract.arguments import TOOL_DEFINITIONS

    components = asyncapi["components"]["schemas"]
    for definition in TOOL_DEFINITIONS:
        schema = copy.deepcopy(components[f"{definition['name']}.arguments"])
        schema.pop("description")
        expected = {k: v for k, v in definition["parameters"].items() if k != "description"}
        assert schema == expected


# ---- examples --------------------------------------------------------------------------------
MESSAGE_SCHEMAS = {
    "headerRecord": ("header-record", "event-stream-record"),
    "eventsRecord": ("events-record", "event-stream-record"),
    "lifecycleRecord": ("lifecycle-record", "event-stream-record"),
    "deleteRecord": ("delete-record", "event-stream-record"),
    "toolRequest": ("tool-request", "request-record"),
    "cancelRequest": ("cancel-request", "request-record"),
    "reply": ("reply",),
    "deadLetter": ("dead-letter",),
}


def test_examples_validate_against_the_schema_files(
    asyncapi: Schema, schemas: dict[str, Schema]
) -> None:
    assert set(MESSAGE_SCHEMAS) == set(asyncapi["components"]["messages"])
    for message, names in MESSAGE_SCHEMAS.items():
        for example in examples(asyncapi, message):
            for name in names:
                validator(schemas[name]).validate(example["payload"])


def test_examples_validate_against_the_asyncapi_payloads(asyncapi: Schema) -> None:
    for name, message in asyncapi["components"]["messages"].items():
        schema = {"$ref": message["payload"]["$ref"], "components": asyncapi["components"]}
        headers = message.get("headers")
        for example in message["examples"]:
            validator(schema).validate(example["payload"])
            if headers is not None:
                validator(headers).validate(example["headers"])
                assert example["headers"]["correlation_id"] == example["payload"]["id"], name


def test_models_accept_the_examples(asyncapi: Schema) -> None:
    for message in ("headerRecord", "eventsRecord", "lifecycleRecord", "deleteRecord"):
        for example in examples(asyncapi, message):
            decode_record(orjson.dumps(example["payload"]))
    request = decode_request(orjson.dumps(payload(asyncapi, "toolRequest", "sessionSearch")))
    assert isinstance(request, ToolRequest)
    cancel = decode_request(orjson.dumps(payload(asyncapi, "cancelRequest", "userAbort")))
    assert isinstance(cancel, CancelRequest) and cancel.id == request.id
    for example in examples(asyncapi, "reply"):
        # the wire form is exactly what Reply.to_json writes
        assert decode_reply(orjson.dumps(example["payload"])).to_json() == example["payload"]
    http = {k: v for k, v in payload(asyncapi, "toolRequest", "sessionSearch").items()}
    del http["reply_to"]
    HttpCall.model_validate(http)


async def test_examples_are_what_sessionq_does(asyncapi: Schema, tmp_path: Path) -> None:
    """The event examples apply to a real store; answering the request example gives the
    ok reply example, with the cancel example first the cancelled one, and past its
    deadline the timeout one."""
    store = Store(tmp_path)
    try:
        for message in ("headerRecord", "eventsRecord", "lifecycleRecord"):
            for example in examples(asyncapi, message):
                applied = store.apply(decode_record(orjson.dumps(example["payload"])))
                assert not applied.noop, message
        store.commit()
    finally:
        store.close()

    request = decode_request(orjson.dumps(payload(asyncapi, "toolRequest", "sessionSearch")))
    cancel = decode_request(orjson.dumps(payload(asyncapi, "cancelRequest", "userAbort")))
    assert isinstance(request, ToolRequest) and isinstance(cancel, CancelRequest)
    service = StoreQueryService(tmp_path)
    try:
        pipeline = Pipeline(service, metrics=Metrics("worker"))

        async def answer(sent_ms: float) -> Reply:
            call = ToolCall.from_request(request, sent_ms=sent_ms)
            return reply_for(request.id, await pipeline.answer(call))

        now_ms = time.time() * 1000
        ok = await answer(now_ms)
        assert ok.to_json() == payload(asyncapi, "reply", "ok")
        late = await answer(now_ms - 31_000)
        assert late.to_json() == payload(asyncapi, "reply", "timeout")
        pipeline.cancel(cancel.id, cancel.reason)
        cancelled = await answer(now_ms)
        assert cancelled.to_json() == payload(asyncapi, "reply", "cancelled")
    finally:
        service.close()

    store = Store(tmp_path)
    try:
        delete = payload(asyncapi, "deleteRecord", "delete")
        assert not store.apply(decode_record(orjson.dumps(delete))).noop
        store.commit()
    finally:
        store.close()


# ---- the host integration guide ---------------------------------------------------------------
GUIDE = DOCS / "host-integration.md"


def guide_values() -> list[Any]:
    """Every JSON value of the guide: the ```json blocks, and the ``key|value`` lines of its
    kcat examples."""
    text = GUIDE.read_text(encoding="utf-8")
    values: list[Any] = []
    decoder = json.JSONDecoder()
    for block in re.findall(r"```json\n(.*?)```", text, flags=re.DOTALL):
        pos = 0
        while pos < len(block):
            if block[pos].isspace():
                pos += 1
                continue
            value, pos = decoder.raw_decode(block, pos)
            values.append(value)
    for line in re.findall(r"^[^|\s{]+\|(\{.*\})$", text, flags=re.MULTILINE):
        values.append(json.loads(line))
    return values


def test_the_guides_json_examples_are_valid_envelopes(schemas: dict[str, Schema]) -> None:
    values = guide_values()
    kinds = {"header": 0, "events": 0, "lifecycle": 0, "delete": 0, "request": 0, "cancel": 0}
    replies = 0
    for value in values:
        kind = value.get("kind")
        if kind in ("header", "events", "lifecycle", "delete"):
            validator(schemas["event-stream-record"]).validate(value)
            decode_record(orjson.dumps(value))
        elif kind in ("request", "cancel"):
            validator(schemas["request-record"]).validate(value)
            decode_request(orjson.dumps(value))
        else:
            validator(schemas["reply"]).validate(value)
            replies += 1
        if kind is not None:
            kinds[kind] += 1
    assert all(kinds.values()) and replies >= 3, (kinds, replies)
