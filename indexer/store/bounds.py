"""How much a writer's open batch may hold before it commits.

A batch commits when its source's count of records says so, or when it holds
``BATCH_BYTES`` of index work (``Store.batch_full``), whichever comes first: Tantivy
bounds its indexing heap itself, but keeps every delete the batch staged until the
commit applies it, so a count of records alone lets memory grow with how small the
records are (300,000 one-line messages: 637 MB).
"""

from __future__ import annotations

from typing import Final

__all__ = ["BATCH_BYTES", "INDEX_HEAP_BYTES"]

BATCH_BYTES: Final = 32 << 20
"""The open batch's bound by default: with Tantivy's heap budget and a piece of a log
being read, a writer's peak stays under 400 MB (``bench/bench_memory_formats.py``)."""

INDEX_HEAP_BYTES: Final = 64_000_000
"""Tantivy's indexing heap: past it the writer flushes a segment of its own. A batch of
one-line messages fills it as much as one of long results; twice as much bought no
speed (``bench/bench_memory_formats.py``)."""
