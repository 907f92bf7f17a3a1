"""The Tantivy full-text index (DESIGN.md "Index"; SPEC §7.3-§7.8, differences 2 and 3).

This is the only package that imports ``tantivy``: ``IndexDoc`` goes in, ``EventHit``
comes out, and filters arrive as the dataclasses of ``indexer.model.search``. It never
imports the query layer above it.

Modules, one concern each:

* ``analyzer``   the ``sessionq`` analyzer, text sanitizing, document tokens and pairs.
* ``schema``     the schema and document layout (its docstring), raw terms, ``IndexDoc``.
* ``queries``    query text and SPEC §6 filters as Tantivy queries (literal, no parser).
* ``ranking``    fetch-and-grow ranking of sessions and of one session's documents.
* ``highlight``  the first phrase occurrence in stored text and the hit snippet.
* ``index``      ``TantivyIndex``: open, reload, write, commit, search.

Snippet text itself (markers, SPEC §7.8 windowing) is ``indexer.store.tantivy.snippet``.
"""

from indexer.store.tantivy.analyzer import (
    ANALYZER_NAME,
    analyze,
    build_analyzer,
    doc_tokens,
    sanitize_text,
)
from indexer.store.tantivy.highlight import first_occurrence, mark_first_occurrence
from indexer.store.tantivy.index import TantivyIndex
from indexer.store.tantivy.schema import IndexDoc, prebuilt

__all__ = [
    "ANALYZER_NAME",
    "IndexDoc",
    "TantivyIndex",
    "analyze",
    "build_analyzer",
    "doc_tokens",
    "first_occurrence",
    "mark_first_occurrence",
    "prebuilt",
    "sanitize_text",
]
