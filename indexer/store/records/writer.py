"""Record -> store writes: the one place that turns a validated record into rows and
index documents.

``StoreWriter`` validates and writes; it never commits and never undoes. Atomicity is
the record path's (``indexer.store.records.store.Store.apply``): it runs each call inside a
savepoint and an index mark, and rolls both back when the call raises. A rejection
never writes on its own account: the one state change it may ask for, marking a
session *held* after a seq gap, travels on the error (``RecordRejectedError.hold``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from indexer.errors import (
    INVALID_RECORD,
    INVALID_SURFACE,
    SEQ_CONFLICT,
    SEQ_GAP,
    SOURCE_CONFLICT,
    UNKNOWN_SESSION,
    LogValidationError,
    RecordRejectedError,
)
from indexer.logs.envelope import check_envelope
from indexer.logs.importers.common import AGENTS
from indexer.logs.reader import SessionLog
from indexer.model import SessionEvent, SessionHeader, parse_header
from indexer.model.event import load_json
from indexer.model.records import (
    DeleteRecord,
    EventsRecord,
    EventStreamRecord,
    HeaderRecord,
    LifecycleRecord,
)
from indexer.redact import Redaction
from indexer.redact.counts import add_counts, reset_counts
from indexer.store.blocks.dictionaries import Dictionaries
from indexer.store.blocks.table import BlockRow
from indexer.store.records.plan import FreshLog, WritePlan, index_doc, plan_events
from indexer.store.tables.sqlite_tables import SqliteTables
from indexer.store.tantivy import IndexDoc, TantivyIndex
from indexer.surface.fold import FoldedLog, FoldStep, FoldViolation, SurfaceFold
from indexer.surface.text import extract_text


@dataclass(frozen=True, slots=True)
class Applied:
    """What one record changed (for counters and logs): ``documents`` are the new
    events' index documents (not those of older events written again as shadowed)."""

    kind: str
    session_id: str
    events: int = 0
    documents: int = 0
    noop: bool = False


def _outranks(new: SessionHeader, stored: SessionHeader) -> bool:
    """Which log owns a session id two logs of different agents claim, whichever is
    applied first (``ingest`` and a watcher read in different orders): the agent that
    comes first in ``AGENTS`` — a dsh log, whose id is its own, over an imported one.
    Two logs of one agent keep the first (the other is a conflict)."""
    rank = {agent: n for n, agent in enumerate(AGENTS)}
    return rank.get(new.agent, len(AGENTS)) < rank.get(stored.agent, len(AGENTS))


def _decode(raw: bytes) -> SessionEvent:
    obj: dict[str, Any] = load_json(raw)
    return SessionEvent.from_obj(obj, raw)


class StoreWriter:
    """Applies event-stream records to the tables and the index (one writer per data dir).

    ``redaction`` is the dir's (``indexer.redact.state``): documents hold redacted text
    unless it is ``off``; with ``store`` each incoming event is redacted first, so the
    re-delivery check, the rows, the blocks and the title all see the redacted event."""

    def __init__(
        self,
        tables: SqliteTables,
        index: TantivyIndex,
        dictionaries: Dictionaries,
        redaction: Redaction,
    ) -> None:
        self.tables = tables
        self.index = index
        self.dictionaries = dictionaries
        self.redaction = redaction

    def apply(self, record: EventStreamRecord) -> Applied:
        """Validate then write one decoded record; raises ``RecordRejectedError``."""
        if isinstance(record, HeaderRecord):
            try:
                header = parse_header(record.header)
            except LogValidationError as exc:
                raise RecordRejectedError(f"invalid header: {exc.message}", INVALID_RECORD) from exc
            return self.apply_header(header)
        if isinstance(record, EventsRecord):
            events: list[SessionEvent] = []
            for i, obj in enumerate(record.events):
                try:
                    events.append(check_envelope(obj, i))
                except LogValidationError as exc:
                    raise RecordRejectedError(
                        f"invalid event at batch index {i}: {exc.message}", INVALID_RECORD
                    ) from exc
            return self.apply_events(record.session_id, events)
        if isinstance(record, LifecycleRecord):
            return self.set_live(record.session_id, record.live)
        if isinstance(record, DeleteRecord):
            return self.delete(record.session_id)
        raise RecordRejectedError(f"unsupported record {type(record).__name__}", INVALID_RECORD)

    def apply_log(self, log: SessionLog) -> Applied:
        """A log read from a file, or a piece of one (``indexer.logs.reader``): its
        header (a no-op for every piece after the first), then its events (folded
        already)."""
        head = self.apply_header(log.header)
        if not log.events:
            return head
        applied = self.apply_events(log.header.id, log.events, folded=log.fold)
        return Applied(
            "log",
            log.header.id,
            events=applied.events,
            documents=applied.documents,
            noop=head.noop and applied.noop,
        )

    def apply_fresh(self, fresh: FreshLog) -> Applied | None:
        """A log planned elsewhere for a new session; ``None`` (nothing written) when the
        store already holds the session: then it must be applied as a log."""
        if fresh.redaction != self.redaction:
            return None  # planned under another mode: applied as a log, the ordinary way
        head = self.apply_header(fresh.header)  # a stored session: no-op (or a conflict)
        if head.noop:
            return None
        if fresh.plan is None:
            return head
        applied = self.apply_plan(fresh.header, fresh.plan, fresh.blocks)
        return Applied("log", fresh.header.id, events=applied.events, documents=applied.documents)

    # ---- header, lifecycle, delete ------------------------------------------------------------
    def apply_header(self, header: SessionHeader) -> Applied:
        """New session, or a no-op re-delivery; conflicting immutable fields are rejected,
        unless the header outranks the stored one (``_outranks``): then the stored session
        yields, deleted whole, and this one takes its id."""
        state = self.tables.session_state(header.id)
        if state is not None:
            stored = SessionHeader.model_validate_json(state.header_json)
            if stored.compatible_with(header):
                return Applied("header", header.id, noop=True)
            if not _outranks(header, stored):
                raise RecordRejectedError(
                    f'session source headers conflict for session "{header.id}"', SOURCE_CONFLICT
                )
            self.delete(header.id)
        self.tables.insert_session(
            header.id,
            orjson.dumps(header.to_json()).decode(),
            header.cwd,
            header.parent_session,
            header.created_at,
        )
        return Applied("header", header.id)

    def set_live(self, session_id: str, live: bool) -> Applied:
        state = self.tables.session_state(session_id)
        if state is None:
            raise RecordRejectedError(f'session "{session_id}" has no header', UNKNOWN_SESSION)
        if state.live == live:
            return Applied("lifecycle", session_id, noop=True)
        self.tables.set_live(session_id, live)
        return Applied("lifecycle", session_id)

    def delete(self, session_id: str) -> Applied:
        """Remove every trace: rows, raw JSON, index documents. Deleting nothing is a no-op."""
        if self.tables.session_state(session_id) is None:
            return Applied("delete", session_id, noop=True)
        key = self.tables.delete_session(session_id)
        if key is not None:
            self.dictionaries.note_deleted(key)
        self.index.delete_session(session_id)
        return Applied("delete", session_id)

    # ---- events -------------------------------------------------------------------------------
    def apply_events(
        self,
        session_id: str,
        events: Sequence[SessionEvent],
        *,
        folded: FoldedLog | None = None,
    ) -> Applied:
        """Continue a session's log with a contiguous batch.

        Order: (1) drop an identical re-delivered prefix (a differing one is a conflict);
        (2) reject a gap, asking for the session to be held; (3) fold every new event on a copy of
        the stored surface; (4) write rows, shadow marks, links, replacements, title and
        fold state; (5) upsert index documents for new events and re-classified ones.
        """
        state = self.tables.session_state(session_id)
        if state is None:
            raise RecordRejectedError(f'session "{session_id}" has no header', UNKNOWN_SESSION)
        stored_counts: dict[int, Counter[str]] = {}
        if self.redaction.stores_redacted:
            events = self.redaction.events(events, stored_counts)
        new = self._drop_redelivered(session_id, state.next_seq, events)
        if not new:
            return Applied("events", session_id, noop=True)
        kept: Counter[str] = Counter()
        for e in new:
            kept.update(stored_counts.get(e.seq, ()))
        if new[0].seq != state.next_seq:
            reason = f"session event seq {new[0].seq} is not contiguous; expected {state.next_seq}"
            raise RecordRejectedError(reason, SEQ_GAP, hold=reason)

        header = SessionHeader.model_validate_json(state.header_json)
        if (
            folded is not None
            and folded.start == state.next_seq
            and len(folded.steps) == len(new)
            and folded.start_nodes == state.surface
        ):
            # A log (or its next piece) a reader folded from where the stored session
            # stands: its steps are this fold.
            return self._write(header, new, folded.steps, folded.state, kept)
        fold = SurfaceFold(state.surface, state.next_seq)
        in_batch: dict[int, SessionEvent] = {}

        def event_at(seq: int) -> SessionEvent:
            if seq in in_batch:
                return in_batch[seq]
            row = self.tables.raw_events(session_id, [seq]).get(seq)
            if row is None:
                raise LookupError(seq)
            return _decode(row.raw)

        steps: list[FoldStep] = []
        for event in new:
            try:
                steps.append(fold.step(event, event_at))
            except FoldViolation as exc:
                raise RecordRejectedError(
                    f"invalid session surface at seq {event.seq}: {exc.message}", INVALID_SURFACE
                ) from exc
            in_batch[event.seq] = event
        return self._write(header, new, steps, fold, kept)

    def _same_redacted(self, stored: bytes, event: SessionEvent) -> bool:
        """``store`` mode: a stored event redacted by another rule set than the
        re-delivered copy (redacted by this one) is the same event when this rule set
        redacts both alike."""
        if not self.redaction.stores_redacted:
            return False
        return self.redaction.event(_decode(stored)).raw == event.raw

    def _drop_redelivered(
        self, session_id: str, next_seq: int, events: Sequence[SessionEvent]
    ) -> list[SessionEvent]:
        overlap = [e for e in events if e.seq < next_seq]
        if overlap:
            stored = self.tables.raw_events(session_id, [e.seq for e in overlap])
            for e in overlap:
                row = stored.get(e.seq)
                if row is None or (row.raw != e.raw and not self._same_redacted(row.raw, e)):
                    raise RecordRejectedError(
                        f"event seq {e.seq} conflicts with the stored event of session "
                        f'"{session_id}"',
                        SEQ_CONFLICT,
                    )
        return [e for e in events if e.seq >= next_seq]

    def _write(
        self,
        header: SessionHeader,
        new: Sequence[SessionEvent],
        steps: Sequence[FoldStep],
        fold: SurfaceFold,
        stored_redactions: Counter[str],
    ) -> Applied:
        plan = plan_events(header, new, steps, fold, self.redaction)
        plan.redactions.update(stored_redactions)
        return self.apply_plan(header, plan)

    def apply_plan(
        self, header: SessionHeader, plan: WritePlan, blocks: Sequence[BlockRow] | None = None
    ) -> Applied:
        """Write a plan (``indexer.store.records.plan``). ``blocks``: the plan's rows already cut
        and compressed into blocks (``indexer.store.event_blocks.block_rows``), for a
        session that holds no events yet."""
        sid = plan.session_id
        for seq, start, end, shadowed in plan.replacements:
            self.tables.insert_replacement(sid, seq, start, end, shadowed)
        if blocks is None:
            self.tables.insert_events(sid, plan.rows)
        else:
            self.tables.insert_blocks(sid, blocks)
        for s, by in plan.marks:
            self.tables.mark_shadowed(sid, [s], by)
        docs: list[IndexDoc] = []
        if plan.older_marks:
            stored = self.tables.raw_events(sid, [s for s, _by in plan.older_marks])
            for s, by in plan.older_marks:
                self.tables.mark_shadowed(sid, [s], by)
                row = stored[s]
                if row.indexed:
                    ev = _decode(row.raw)
                    docs.append(index_doc(header, ev, "shadowed", self._text(ev)))
        add_counts(self.tables.conn, sid, plan.redactions)
        self.tables.insert_source_runs(sid, plan.source_runs)
        self.tables.update_fold_state(
            sid,
            plan.next_seq,
            plan.nodes,
            plan.last_step_start,
            plan.title_json,
            plan.last_time,
        )
        docs.extend(plan.docs)
        if plan.first_seq == 0:  # every document is new (and there are no older marks)
            self.index.upsert(docs, session=sid)
        elif docs:  # the new events' documents under one range delete, older ones by key
            self.index.upsert(docs, new_seqs=(sid, plan.first_seq, plan.next_seq))
        return Applied("events", sid, events=plan.events, documents=len(plan.docs))

    def reindex(self, session_ids: Iterable[str], *, recount: bool = False) -> int:
        """Stage each session's index documents anew from the committed rows (the repair
        after a commit whose Tantivy step landed and whose SQLite step did not, a purge
        pass, a rebuild of the index); a session the tables do not hold loses its
        documents. Returns documents staged. ``recount`` (a rebuild, inside a
        transaction): the sessions' redaction counts are counted anew with the documents,
        but in ``store`` mode, where they count what was kept out of the stored events."""
        staged = 0
        recount = recount and not self.redaction.stores_redacted
        for sid in session_ids:
            self.index.delete_session(sid)
            state = self.tables.session_state(sid)
            if state is None:
                continue
            header = SessionHeader.model_validate_json(state.header_json)
            docs = []
            counts: Counter[str] = Counter()
            for row in self.tables.indexed_events(sid):
                event = _decode(row.raw)
                docs.append(index_doc(header, event, row.surface, self._text(event, counts)))
            if recount:
                reset_counts(self.tables.conn, sid)
                add_counts(self.tables.conn, sid, counts)
            self.index.upsert(docs)
            staged += len(docs)
        return staged

    def _text(self, event: SessionEvent, counts: Counter[str] | None = None) -> str:
        """The index text of a stored event, redacted as the dir's mode says."""
        return self.redaction.text(extract_text(event.type, event.data), counts)
