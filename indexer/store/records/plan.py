"""A batch of one session's new events as the writes it makes, computed without the store.

``plan_events`` is the pure half of ``StoreWriter`` for a batch that continues a session:
from the folded steps it derives every row, shadow mark, link, replacement, the fold
state and the index documents. It reads nothing stored, so it runs where the events were
read — in the writer process for a record, in an ingest worker process for a whole log
(``indexer.sources.parallel``) — and the writer applies the plan the same way in both
cases: one planning code path, so parallel ingest writes what sequential ingest writes.

Shadow marks on events stored *before* the batch need their stored rows (an indexed one
is re-indexed as shadowed); the plan lists them (``older_marks``) and the writer does
that part. A whole log read from seq 0 never has any.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from indexer.logs.chunks import PackedChunks
from indexer.logs.reader import PackedLog
from indexer.model import SessionEvent, SessionHeader
from indexer.model.event import SURFACE_ELIGIBLE, dump_json
from indexer.redact import Redaction
from indexer.store.blocks.format import StoredEvent
from indexer.store.tables.schema import source_runs
from indexer.store.tantivy import IndexDoc
from indexer.surface.fold import FoldStep, SurfaceFold
from indexer.surface.text import extract_text
from indexer.surface.titles import TitleMalformedError, fold_title


@dataclass(slots=True)
class WritePlan:
    """Everything one batch writes, in the order the writer applies it."""

    session_id: str
    first_seq: int  # 0: the batch starts the session (it holds no document yet)
    rows: list[StoredEvent]
    replacements: list[tuple[int, int, int, tuple[int, ...]]]  # seq, start, end, shadowed
    marks: list[tuple[int, int]]  # (seq, replaced_by) of events in this batch
    older_marks: list[tuple[int, int]]  # (seq, replaced_by) of events stored before it
    source_runs: list[tuple[int, int, int]]  # (first, last, seq): seq cites first..last
    next_seq: int
    nodes: list[int]
    last_step_start: int | None
    title_json: str | None
    last_time: int
    events: int  # len(rows), kept when the rows travel as built blocks instead
    docs: list[IndexDoc] = field(default_factory=list)
    redactions: Counter[str] = field(default_factory=Counter)  # secrets kept out, by kind


def title_json(event: SessionEvent) -> str:
    """The stored title observation: a snapshot, or the reason the title is unreadable.
    A title cut mid-emoji holds a lone surrogate: ``dump_json`` keeps it as its escape."""
    try:
        snap = fold_title(event)
    except TitleMalformedError as exc:
        return dump_json({"error": exc.message}).decode()
    return dump_json(
        {
            "title": snap.title,
            "messageSeqs": snap.message_seqs,
            "source": snap.source,
            "eventSeq": snap.event_seq,
            "updatedAt": snap.updated_at,
        }
    ).decode()


def index_doc(header: SessionHeader, event: SessionEvent, surface: str, text: str) -> IndexDoc:
    return IndexDoc(
        session_id=header.id,
        seq=event.seq,
        type=event.type,
        time=event.time,
        surface=surface,  # type: ignore[arg-type]
        text=text,
        cwd=header.cwd,
        parent=header.parent_session,
        created_at=header.created_at,
    )


def plan_events(
    header: SessionHeader,
    new: Sequence[SessionEvent],
    steps: Sequence[FoldStep],
    fold: SurfaceFold,
    redaction: Redaction,
) -> WritePlan:
    """The writes of ``new`` (contiguous, continuing the session, folded into ``steps``
    and ``fold``). Documents hold the text ``redaction`` leaves; a row is marked indexed
    by its extracted text, redacted or not."""
    sid = header.id
    surface: dict[int, str] = {}
    replaced_by: dict[int, int] = {}
    cited: dict[int, list[int]] = {}
    replacements: list[tuple[int, int, int, tuple[int, ...]]] = []
    for event, step in zip(new, steps, strict=True):
        surface[event.seq] = "current" if event.type in SURFACE_ELIGIBLE else "log-only"
        if step.sources:
            cited.setdefault(event.seq, []).extend(step.sources)
        if step.kind == "replace":
            assert step.start is not None and step.end is not None
            replacements.append((event.seq, step.start, step.end, tuple(step.shadowed)))
            for s in step.shadowed:
                replaced_by[s] = event.seq
    for s in replaced_by:
        if s in surface:
            surface[s] = "shadowed"

    texts = {e.seq: extract_text(e.type, e.data) for e in new}
    redactions: Counter[str] = Counter()
    shown = {seq: redaction.text(text, redactions) for seq, text in texts.items() if text}
    rows = [
        StoredEvent(e.seq, e.type, e.time, surface[e.seq], bool(texts[e.seq]), e.raw) for e in new
    ]
    last_step = next((e.seq for e in reversed(new) if e.type == "step/start"), None)
    last_title = next((e for e in reversed(new) if e.type == "session/title"), None)
    return WritePlan(
        session_id=sid,
        first_seq=new[0].seq,
        rows=rows,
        replacements=replacements,
        marks=[(s, by) for s, by in replaced_by.items() if s in surface],
        older_marks=sorted((s, by) for s, by in replaced_by.items() if s not in surface),
        source_runs=[
            (first, last, seq) for seq, seqs in cited.items() for first, last in source_runs(seqs)
        ],
        next_seq=fold.next_seq,
        nodes=list(fold.nodes),
        last_step_start=last_step,
        title_json=title_json(last_title) if last_title is not None else None,
        last_time=new[-1].time,
        events=len(rows),
        docs=[index_doc(header, e, surface[e.seq], shown[e.seq]) for e in new if texts[e.seq]],
        redactions=redactions,
    )


def plan_packed(log: PackedLog, redaction: Redaction) -> WritePlan | None:
    """``plan_events`` of a whole log read packed (``read_log_packed``); ``None`` for a
    log of chunk rows only. A row's members are log-only chunks without text or sources:
    they add nothing but their count and, when they end the log, its last time. The
    plan's rows are the events only (``packed_blocks`` adds the rows' members)."""
    if not log.events:
        return None
    plan = plan_events(log.header, log.events, log.fold.steps, log.fold.state, redaction)
    plan.first_seq = 0
    plan.events = log.count
    last = log.items[-1]
    if isinstance(last, PackedChunks):
        plan.last_time = last.times[-1]
    return plan


@dataclass(slots=True)
class FreshLog:
    """A whole log read from seq 0, planned as the writes of a session the store does not
    hold yet, its blocks built and compressed (``indexer.sources.parallel``). The writer
    applies it only when its header creates the session; otherwise the log is applied
    the ordinary way."""

    header: SessionHeader
    plan: WritePlan | None  # None: a log without events
    blocks: list[tuple[int, int, int, bytes]]
    redaction: Redaction  # what it was planned with: a writer of another mode re-reads it
