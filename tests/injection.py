"""Failure injection for the record-path tests (issue 8): wrap a real method or function
so that it raises when a predicate holds, before or after doing its real work, and count
how often it ran and fired. The wrapped callable is patched with ``monkeypatch``, so it
is restored when the test ends; ``disarm()`` clears the failure earlier.

Predicates receive the wrapped callable's arguments (``self`` first for a method).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from indexer.store.tables.sqlite_tables import SqliteTables
from indexer.store.tables.transaction import Transaction


@dataclass
class Injection:
    """One injected failure: ``calls`` counts every call, ``fired`` the raised ones."""

    exc: Callable[[], BaseException]
    when: Callable[..., bool]
    after: bool = False
    skip: int = 0
    times: int | None = None
    armed: bool = True
    calls: int = 0
    matched: int = 0
    fired: int = 0

    def disarm(self) -> None:
        self.armed = False

    def arm(self, times: int | None = None) -> None:
        self.armed, self.fired, self.matched, self.skip = True, 0, 0, 0
        self.times = times

    def _fires(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        if not self.armed or (self.times is not None and self.fired >= self.times):
            return False
        if not self.when(*args, **kwargs):
            return False
        self.matched += 1
        return self.matched > self.skip


def inject(
    monkeypatch: pytest.MonkeyPatch,
    owner: Any,
    name: str,
    exc: Callable[[], BaseException],
    *,
    when: Callable[..., bool] | None = None,
    after: bool = False,
    skip: int = 0,
    times: int | None = None,
) -> Injection:
    """Patch ``owner.name`` (a class or a module) to raise ``exc()`` on the calls that
    match ``when``: the first ``skip`` matching calls pass, then at most ``times`` raise.
    ``after``: the real callable runs first (its side effects happen), then it raises."""
    real = getattr(owner, name)
    injection = Injection(exc, when or (lambda *_a, **_k: True), after, skip, times)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        injection.calls += 1
        fire = injection._fires(args, kwargs)
        if fire and not injection.after:
            injection.fired += 1
            raise injection.exc()
        result = real(*args, **kwargs)
        if fire:
            injection.fired += 1
            raise injection.exc()
        return result

    monkeypatch.setattr(owner, name, wrapper)
    return injection


# ---- predicates ----


def session_arg(session_id: str) -> Callable[..., bool]:
    """A ``SqliteTables`` method whose first argument is the session id."""
    return lambda _self, sid, *_a, **_k: sid == session_id


def rows_of(session_id: str, seq: int | None = None) -> Callable[..., bool]:
    """A ``SqliteTables`` method taking rows that start with (session id, seq, ...)."""

    def match(_self: Any, rows: Iterable[tuple[Any, ...]], *_a: Any, **_k: Any) -> bool:
        listed = list(rows) if isinstance(rows, list) else []
        return any(r[0] == session_id and (seq is None or r[1] == seq) for r in listed)

    return match


def events_batch_of(session_id: str, seq: int | None = None) -> Callable[..., bool]:
    """``SqliteTables.insert_events(session_id, events)`` for this session (and seq)."""

    def match(_self: Any, sid: str, events: Sequence[Any], *_a: Any, **_k: Any) -> bool:
        return sid == session_id and (seq is None or any(e.seq == seq for e in events))

    return match


def doc_of(session_id: str, seq: int | None = None) -> Callable[..., bool]:
    """``indexer.store.tantivy.index.document(doc, ordinal)``."""
    return lambda d, *_a, **_k: d.session_id == session_id and (seq is None or d.seq == seq)


def docs_of(session_id: str, seq: int | None = None) -> Callable[..., bool]:
    """``TantivyIndex.upsert(self, docs)`` (``docs`` is a list in the writer)."""

    def match(_self: Any, docs: Any, *_a: Any, **_k: Any) -> bool:
        listed = list(docs) if isinstance(docs, list) else []
        return any(d.session_id == session_id and (seq is None or d.seq == seq) for d in listed)

    return match


def in_transaction(tx: Transaction, *_a: Any, **_k: Any) -> bool:
    """``Transaction.commit`` of an open transaction (not a no-op commit)."""
    return tx.open


# ---- SQLite ending the transaction on its own ----


@dataclass
class TransactionLoss:
    """``SqliteTables.insert_events`` for one session: SQLite rolls the whole batch
    transaction back (as on a full disk), then the statement fails."""

    session_id: str
    times: int | None = 1
    armed: bool = True
    fired: int = 0

    def disarm(self) -> None:
        self.armed = False

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        real = SqliteTables.insert_events

        def insert_events(tables: SqliteTables, session_id: str, events: Any) -> None:
            hit = self.armed and session_id == self.session_id
            if hit and (self.times is None or self.fired < self.times):
                self.fired += 1
                tables.conn.execute("ROLLBACK")
                raise sqlite3.OperationalError("database or disk is full")
            real(tables, session_id, events)

        monkeypatch.setattr(SqliteTables, "insert_events", insert_events)


def error_chain(exc: BaseException | None) -> list[BaseException]:
    """``exc`` and every cause / context behind it."""
    out: list[BaseException] = []
    while exc is not None and exc not in out:
        out.append(exc)
        exc = exc.__cause__ or exc.__context__
    return out
