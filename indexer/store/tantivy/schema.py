"""The index schema and document layout (DESIGN.md "Index"; SPEC §7.3, §7.4).

One Tantivy document per semantic event, carrying the event metadata and the
session's immutable header fields so that a search is one Tantivy query:

* ``key``        raw term of ``<session id>:<seq>``; upsert = delete-by-key, then add.
* ``session``    raw term of the session id (id filter, availability, exclusions).
* ``sid``        u64 fast field, a per-index session ordinal: grouping hits by session
                 reads a column instead of loading stored documents.
* ``seq``, ``time``, ``created_at``: i64, indexed and fast (ranges, tie keys).
* ``type``, ``surface``: raw terms. ``cwd``, ``parent``: raw terms, ``NULL_TERM`` for
  "no cwd" / "root session", so ``IN [x, null]`` is a single term-set query.
* ``text``       the ``sessionq`` analyzer's tokens with positions (indexed from the tokens
                 joined by spaces: the analyzer runs once, in Python, ``prebuilt``).
* ``body``       stored-only bytes: the text (UTF-8), for snippets.
* ``pairs``      the adjacent token pairs ``a_b`` of ``text`` whose two tokens are both
                 *frequent* (a single character, or a token of the shipped list of the
                 most frequent tokens of real agent logs: ``analyzer.frequent``), with
                 frequencies and no positions. A two-token phrase of an indexed pair is
                 the pair's term query (the same documents, scored by BM25 on the pair's
                 frequency: several times cheaper than a phrase over common words). Any
                 other phrase is the positional phrase over ``text`` and also requires
                 its indexed pairs (with score 0), whose short posting lists drive the
                 intersection. Pairs with a rare token are not indexed: the rare token
                 drives a phrase query fast already, and they were most of the field.
* ``meta``       stored-only bytes: session id, type, surface, seq, time (JSON array): what a
                 hit shows; the session's cwd, parent and creation come from its row.

``INDEX_FORMAT`` names this layout; the data dir records the format its index was built
with (``indexer.store.maintenance.index_format``), so a release with another layout rebuilds
the index from the stored rows instead of misreading it.

Raw terms are tagged — ``v<value>``, or ``h<sha256>`` for a value too long to be a
Tantivy term (the indexer silently drops longer tokens, which could then never match)
or holding a lone surrogate (no Rust string can) — so ``NULL_TERM`` (``n``) can equal
no value.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson
import tantivy

from indexer.model.search import Surface
from indexer.store.private import write_file
from indexer.store.tantivy.analyzer import (
    FREQUENT_DIGEST,
    MAX_TERM_CHARS,
    SURROGATE,
    doc_tokens,
    pairs_text,
    sanitize_text,
)
from indexer.store.tantivy.words import STEMS_ANALYZER_NAME, words_text


@dataclass(frozen=True, slots=True)
class IndexDoc:
    """One semantic event with non-empty text, as the index stores it."""

    session_id: str
    seq: int
    type: str
    time: int
    surface: Surface
    text: str
    cwd: str | None
    parent: str | None
    created_at: int
    # The ``text``, ``pairs`` and ``words`` field values, computed ahead (``prebuilt``);
    # ``text`` is then sanitized.
    terms: str | None = dataclasses.field(default=None, compare=False, repr=False)
    pairs: str | None = dataclasses.field(default=None, compare=False, repr=False)
    words: str | None = dataclasses.field(default=None, compare=False, repr=False)


def prebuilt(d: IndexDoc) -> IndexDoc:
    """``d`` with its text sanitized and tokenized into its ``text`` and ``pairs`` field
    values: all of a document's tokenizing, done where CPU is free
    (``indexer.sources.parallel``). The writer only fills a ``tantivy.Document`` from
    plain strings — cheaper than shipping a pickled document (several times the text's
    size, and slow to unpickle) — and Tantivy only splits them at spaces."""
    text = sanitize_text(d.text)
    tokens = doc_tokens(text)
    terms = " ".join(tokens)
    return dataclasses.replace(
        d, text=text, terms=terms, pairs=pairs_text(tokens), words=words_text(text, terms)
    )


INDEX_FORMAT: Final = f"5:{FREQUENT_DIGEST}"
"""The index layout: ``5`` = ``4`` and the ``words`` field (stems and identifier
parts: ``indexer.store.tantivy.words``); ``4`` = the ``text`` field indexed from its
analyzer tokens joined by spaces (Tantivy splits them, the analyzer runs once, in
Python), the text stored in ``body``; ``3`` stored ``text`` and had Tantivy run the
analyzer; all have selective, frequency-only pairs (format 1, implied by no record,
held every pair with positions), ``key`` terms led by the session id (adjacent terms
share their prefix), ``meta`` without the session fields and 64 KiB doc-store blocks.
Then the frequent-token list's digest — a new list changes which pairs documents hold,
so it is a new format too."""

NULL_TERM: Final = "n"
"""The ``cwd``/``parent`` term of a session without cwd / without parent."""


def raw_term(value: str) -> str:
    if len(value) <= MAX_TERM_CHARS and SURROGATE.search(value) is None:
        return "v" + value
    return "h" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def nullable_term(value: str | None) -> str:
    return NULL_TERM if value is None else raw_term(value)


_field_term = functools.lru_cache(maxsize=1024)(nullable_term)
"""``nullable_term`` of a document's session, type, surface, cwd and parent: a handful of
values repeated over hundreds of thousands of documents per ingest."""


def doc_key(session_id: str, seq: int) -> str:
    return raw_term(f"{session_id}:{seq}")


def build_schema() -> tantivy.Schema:
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("key", tokenizer_name="raw", index_option="basic")
    sb.add_text_field("session", tokenizer_name="raw", index_option="basic")
    sb.add_unsigned_field("sid", indexed=True, fast=True)
    sb.add_integer_field("seq", indexed=True, fast=True)
    sb.add_text_field("type", tokenizer_name="raw", index_option="basic")
    sb.add_integer_field("time", indexed=True, fast=True)
    sb.add_text_field("surface", tokenizer_name="raw", index_option="basic")
    # The analyzer's tokens, joined by spaces (``prebuilt``): the same terms, positions
    # and lengths as the analyzer run by Tantivy, at a fraction of the indexing CPU.
    sb.add_text_field("text", tokenizer_name="whitespace", index_option="position")
    sb.add_text_field("pairs", tokenizer_name="whitespace", index_option="freq")
    sb.add_text_field("words", tokenizer_name=STEMS_ANALYZER_NAME, index_option="freq")
    sb.add_text_field("cwd", tokenizer_name="raw", index_option="basic")
    sb.add_text_field("parent", tokenizer_name="raw", index_option="basic")
    sb.add_integer_field("created_at", indexed=True, fast=True)
    sb.add_bytes_field("meta", stored=True)
    sb.add_bytes_field("body", stored=True)  # the text itself (UTF-8), for snippets
    return sb.build()


def document(d: IndexDoc, ordinal: int) -> tuple[str, tantivy.Document]:
    """The ``key`` term of ``d`` and its Tantivy document (``ordinal`` is its ``sid``)."""
    if d.terms is None or d.pairs is None or d.words is None:
        d = prebuilt(d)
    terms, pairs, words = d.terms or "", d.pairs or "", d.words or ""
    key = doc_key(d.session_id, d.seq)
    doc = tantivy.Document()
    doc.add_text("key", key)
    doc.add_text("session", _field_term(d.session_id))
    doc.add_integer("seq", d.seq)
    doc.add_text("type", _field_term(d.type))
    doc.add_integer("time", d.time)
    doc.add_text("surface", _field_term(d.surface))
    doc.add_text("text", terms)
    if pairs:
        doc.add_text("pairs", pairs)
    if words:
        doc.add_text("words", words)
    doc.add_text("cwd", _field_term(d.cwd))
    doc.add_text("parent", _field_term(d.parent))
    doc.add_integer("created_at", d.created_at)
    doc.add_bytes(
        "meta",
        dump_meta([d.session_id, d.type, d.surface, d.seq, d.time]),
    )
    doc.add_bytes("body", d.text.encode())
    doc.add_unsigned("sid", ordinal)
    return key, doc


def dump_meta(values: list[Any]) -> bytes:
    try:
        return orjson.dumps(values)
    except TypeError:  # a lone surrogate: the stdlib escapes it and reads it back
        return json.dumps(values).encode("ascii")


def stored_text(doc: tantivy.Document) -> str:
    """The document's text as stored (sanitized: valid UTF-8)."""
    body = doc.get_first("body")
    return bytes(body).decode() if body else ""


def load_meta(doc: tantivy.Document) -> list[Any]:
    """The ``meta`` array: session id, type, surface, seq, time."""
    raw = doc.get_first("meta") or b"[]"
    try:
        meta: list[Any] = orjson.loads(raw)
    except orjson.JSONDecodeError:
        meta = json.loads(raw)
    return meta


def schema_of(meta_json: bytes | None) -> Any:
    """The schema part of a ``meta.json`` (``None`` for no index)."""
    if meta_json is None:
        return None
    try:
        return json.loads(meta_json).get("schema")
    except ValueError:  # a torn read cannot happen (atomic replace); be safe anyway
        return None


DOCSTORE_BLOCK_BYTES: Final = 64 * 1024
"""Tantivy compresses stored documents (LZ4) in blocks of this size; its 16 KiB default
compresses this index's texts (many short documents) 11 % worse, and a read decompresses
one block either way (bench/README.md)."""


def open_or_create(schema: tantivy.Schema, path: Path) -> tantivy.Index:
    """Open the index at ``path``, creating it with ``DOCSTORE_BLOCK_BYTES`` if it does not
    exist. tantivy-py takes no index settings: they are Tantivy's own ``meta.json`` field,
    set before any segment exists and kept by every later commit."""
    meta = path / "meta.json"
    fresh = not meta.exists()
    index = tantivy.Index(schema, path=str(path), reuse=True)
    if not fresh:
        return index
    doc = json.loads(meta.read_text(encoding="utf-8"))
    doc["index_settings"]["docstore_blocksize"] = DOCSTORE_BLOCK_BYTES
    tmp = meta.with_name("meta.json.tmp")
    write_file(tmp, json.dumps(doc).encode())
    tmp.replace(meta)
    return tantivy.Index(schema, path=str(path), reuse=True)
