"""The wire protocol, written down from the envelope models: one JSON Schema per envelope
and one AsyncAPI 3.0 document for sessionq's four topics.

The pydantic models (``indexer.model.records``, ``worker.contract.envelopes``) are the source of
truth; this package adds what the models cannot say (field descriptions, the header and
event envelope rules that ``parse_header`` / ``check_envelope`` enforce in code, the
wire form of a reply, the dead-letter value built by ``indexer.kafka.dead_letter.dead_letter``).

``python -m worker.devtools.protocol_docs [--out docs] [--check]`` writes
``<out>/schemas/<name>.schema.json`` and ``<out>/asyncapi.json``. The output is
deterministic: keys in generation order, 2-space indent, UTF-8, one trailing newline.
``--check`` writes nothing and exits 1 when a committed file is stale.

Modules: ``parts`` (the hand-written schema parts), ``schemas`` (one JSON Schema per
envelope), ``examples`` (the AsyncAPI example messages), ``asyncapi`` (the AsyncAPI
document), ``files`` (rendering, the staleness check, the writer and the command line).
"""

from __future__ import annotations

from worker.devtools.protocol_docs.asyncapi import build_asyncapi
from worker.devtools.protocol_docs.files import (
    SUMMARY,
    build_files,
    main,
    render,
    stale_files,
    write_files,
)
from worker.devtools.protocol_docs.parts import (
    DEAD_LETTER,
    FIELD_DOCS,
    REPLY_WIRE_FORM,
    SESSION_EVENT,
    SESSION_HEADER,
    Schema,
)
from worker.devtools.protocol_docs.schemas import JSON_SCHEMA_DIALECT, build_schemas

__all__ = [
    "DEAD_LETTER",
    "FIELD_DOCS",
    "JSON_SCHEMA_DIALECT",
    "REPLY_WIRE_FORM",
    "SESSION_EVENT",
    "SESSION_HEADER",
    "SUMMARY",
    "Schema",
    "build_asyncapi",
    "build_files",
    "build_schemas",
    "main",
    "render",
    "stale_files",
    "write_files",
]
