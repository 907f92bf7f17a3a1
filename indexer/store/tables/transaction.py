"""The writer connection's transaction, owned here and nowhere else.

Two kinds of transaction run on the writer connection, never at the same time:

* the **batch**: begun by the first record of a batch (``Savepoint`` inside the record
  path), ended by the commit protocol (``indexer.store.records.checkpoint``) or an abort;
  later records of a batch see the earlier ones;
* a **step**: one short transaction of its own between batches (dictionary upkeep,
  purge bookkeeping, the caught-up mark), ``with tx.step(): ...``; it commits at the end
  of the block and rolls back if the block raises. A step never runs inside an open
  batch: that would commit the batch's rows without its offsets.

A rollback runs the ``on_rollback`` hooks (caches of rows a rollback may remove).
SQLite may end a transaction on its own (a full disk, an I/O error): that is not an
error of the rollback, and a savepoint that finds its transaction gone raises
``TransactionLostError`` (the whole batch is lost).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType

from indexer.errors import PERSISTENCE_FAILED, SessionqError
from indexer.store.failure import describe

__all__ = ["Savepoint", "Transaction", "TransactionLostError"]


class TransactionLostError(SessionqError):
    """SQLite ended the batch transaction on its own (it does on a full disk or an I/O
    error): the savepoint is gone and so is every row since the last commit."""

    code = PERSISTENCE_FAILED


class Transaction:
    """Begin, commit and roll back the writer connection's transaction (module docstring)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._open = False
        self._on_rollback: list[Callable[[], None]] = []

    @property
    def open(self) -> bool:
        return self._open

    def on_rollback(self, hook: Callable[[], None]) -> None:
        self._on_rollback.append(hook)

    def begin(self) -> None:
        if not self._open:
            self.conn.execute("BEGIN IMMEDIATE")
            self._open = True

    def commit(self) -> None:
        if self._open:
            self.conn.execute("COMMIT")
            self._open = False

    def discard_caches(self) -> None:
        """Run the ``on_rollback`` hooks: rows the caches name may be gone."""
        for hook in self._on_rollback:
            hook()

    def rollback(self) -> None:
        """Roll back; a transaction SQLite already ended itself is not an error (that
        would mask the error that ended it)."""
        self.discard_caches()
        if self._open:
            self._open = False
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")

    def lost(self) -> None:
        """SQLite ended the transaction itself; the next write begins a new one."""
        self.discard_caches()
        self._open = False

    @contextmanager
    def step(self) -> Iterator[None]:
        """One short transaction between batches (module docstring)."""
        if self._open:
            raise RuntimeError("a transaction step cannot run inside an open batch")
        self.begin()
        try:
            yield
        except BaseException:
            self.rollback()
            raise
        self.commit()


class Savepoint:
    """A nested, named rollback point inside the batch (begun if none is open)."""

    def __init__(self, tx: Transaction, name: str) -> None:
        self.tx = tx
        self.name = name

    def __enter__(self) -> Savepoint:
        self.tx.begin()
        self.tx.conn.execute(f"SAVEPOINT {self.name}")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        conn = self.tx.conn
        if exc_type is None:
            conn.execute(f"RELEASE {self.name}")
            return
        self.tx.discard_caches()
        cause = describe(exc, typed=False) if exc is not None else "lost"
        if not conn.in_transaction:
            self.tx.lost()
            raise TransactionLostError(cause) from exc
        try:
            conn.execute(f"ROLLBACK TO {self.name}")
            conn.execute(f"RELEASE {self.name}")
        except sqlite3.Error as rollback_error:
            self.tx.rollback()
            raise TransactionLostError(
                f"{cause} (rollback failed: {describe(rollback_error, typed=False)})"
            ) from exc
