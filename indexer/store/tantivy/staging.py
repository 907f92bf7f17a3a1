"""The index operations of the open batch, and what they hold until it commits.

An operation is ``(field, term, document)``: delete the documents holding ``term`` in
``field`` (none when ``field`` is empty; ``field`` ``QUERY``: the documents ``term``, a
query, matches), then add ``document`` (none for a delete). A
record's operations are staged first, so a record that fails drops its own
(``rollback_to`` a ``mark``); once it succeeded they are taken (``take``) and handed to
Tantivy's writer, which keeps them until the commit: its indexing heap has a budget of
its own, but every delete stays queued. ``pending_bytes`` is what the batch's
operations hold until the commit, staged or handed over: ``DELETE_BYTES`` per delete
(Tantivy's indexing heap holds the documents, within its own budget): a writer commits
when it passes its bound, so memory follows what the batch holds, not its count of
records.
"""

from __future__ import annotations

from typing import Any, Final

import tantivy

__all__ = ["DELETE_BYTES", "QUERY", "Operation", "Staging"]

DELETE_BYTES: Final = 1536
"""What Tantivy holds for one delete until the commit that applies it (its term in the
delete queue: about 1.4 KB each, measured)."""

QUERY: Final = "*query"
"""The ``field`` of an operation whose ``term`` is a query to delete by."""

Operation = tuple[str, Any, "tantivy.Document | None"]


class Staging:
    """The open batch's operations (module docstring)."""

    def __init__(self) -> None:
        self.ops: list[Operation] = []
        self._sizes: list[int] = []
        self._staged_bytes = 0
        self._taken_bytes = 0

    @property
    def pending_bytes(self) -> int:
        return self._staged_bytes + self._taken_bytes

    def add(self, field: str, term: Any, document: tantivy.Document | None) -> None:
        """Stage one operation (module docstring)."""
        size = DELETE_BYTES if field else 0
        self.ops.append((field, term, document))
        self._sizes.append(size)
        self._staged_bytes += size

    def mark(self) -> int:
        """A point to roll back to."""
        return len(self.ops)

    def rollback_to(self, mark: int) -> None:
        """Drop every operation staged after ``mark``."""
        self._staged_bytes -= sum(self._sizes[mark:])
        del self.ops[mark:]
        del self._sizes[mark:]

    def take(self) -> list[Operation]:
        """The staged operations, in order, to hand to the writer (counted until the
        batch ends)."""
        ops, self.ops, self._sizes = self.ops, [], []
        self._taken_bytes += self._staged_bytes
        self._staged_bytes = 0
        return ops

    def clear(self) -> None:
        """The batch ended (committed or rolled back): nothing is held any more."""
        self.ops, self._sizes = [], []
        self._staged_bytes = self._taken_bytes = 0
