"""Turn a set of log files (or roots: dsh, Claude Code, Codex) into event-stream records,
once or as they change.

``LogWatcher`` tracks every log it has read (a file, or one session of an Aider
history: ``LogSource.key``): the file's signature (size, mtime) when it was read, its
session and the next seq not emitted yet. It yields what is new since:
a ``header`` record for a new session, ``events`` records for the tail beyond what was
emitted, and a ``delete`` record when a tracked log disappears. The publisher sends
these to Kafka; the local source (``indexer.sources.local``) applies them to a store.

* ``scan()`` walks every root (discovery) and reads every log whose signature changed;
* ``scan_paths(paths)`` reads only the tracked logs among ``paths`` (what the file
  notifications named; an Aider history's sessions listed again, so a session
  appended to it is read at once) and says whether something else changed that needs
  a walk;
* ``seed()`` starts tracking a log from a stored state, so an unchanged log is not read
  again after a restart.

The scans are lazy: a log is read, piece by piece (``indexer.logs.reader.LogPieces``),
as its records are taken, so what is held at once is a piece, whatever the logs hold.
A log of more than one piece is a stream, as its Kafka topic is: its records go out as
each piece is read, and a broken line after its first piece stops it there (the
records before it stand; the log is reported). Such a log remembers where its read
ended (``indexer.logs.tail``): when it changes, and was only appended to, only what
follows is read (a plain file from that byte, a zstd file from that frame), with the
fold's state carried over. Other logs are read whole on each change, as they are small.

A root whose walk fails, or an Aider history that cannot be listed, is reported and
left as it was: its tracked logs are neither read nor taken for deleted. Only regular
files are read (a FIFO named ``*.jsonl`` would block a reader for good): anything else
is skipped with one note.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from indexer.logs.emitted import (
    MAX_RECORD_BYTES,
    Emitted,
    Signature,
    event_batches,
    file_signature,
)
from indexer.logs.importers.detect import (
    LogFormat,
    LogSource,
    file_sources,
    read_source_pieces,
)
from indexer.logs.importers.trees import TreeFormat, tree_format
from indexer.logs.placement import place
from indexer.logs.reader import PIECE_EVENTS, LogPieces, LogRejectedError, SessionLog
from indexer.logs.tail import Tail
from indexer.logs.watch_roots import Key, WatchRoot, discover_roots, may_be_a_log
from indexer.model.records import DeleteRecord, EventsRecord, HeaderRecord

__all__ = ["LogWatcher", "WatchRoot"]

log = logging.getLogger("sessionq.watch")
_UNREAD: Signature = (-1, -1)


@dataclass(slots=True)
class _Tracked:
    signature: Signature = _UNREAD
    session_id: str | None = None
    next_seq: int = 0
    resend_header: bool = False
    source: LogSource | None = None
    from_start: bool = False  # seeded from a stored state: the next read re-emits it whole
    tail: Tail | None = None  # where the next read goes on, for a log of many pieces
    whole: bool = False  # the running read emits the log from its header


@dataclass(slots=True)
class LogWatcher:
    roots: Sequence[WatchRoot]
    max_record_bytes: int = MAX_RECORD_BYTES
    piece_events: int = PIECE_EVENTS  # a dsh log is read in pieces of this many events
    rejected: dict[str, str] = field(default_factory=dict)  # LogSource.name -> why not read
    _files: dict[Key, _Tracked] = field(default_factory=dict)
    _keys: dict[str, str] = field(default_factory=dict)
    _noted: set[str] = field(default_factory=set)  # paths whose skip was logged once
    _layouts: dict[Path, TreeFormat | None] = field(default_factory=dict)
    _rewound: set[Key] = field(default_factory=set)  # logs to read again (``rewind``)
    # session id -> routing key: deletes to send on the next scan (rewound), and the
    # deletes the last scan emitted (so a rewind can send them again)
    _deletes: dict[str, str] = field(default_factory=dict)
    _emitted_deletes: dict[str, str] = field(default_factory=dict)
    pending: int = 0  # changed logs the running scan has still to read

    @classmethod
    def of(cls, paths: Iterable[Path], format: LogFormat | None = None) -> LogWatcher:
        return cls([WatchRoot(Path(p), format) for p in paths])

    # ---- discovery -----------------------------------------------------------------------------
    def discover(self) -> tuple[dict[Key, LogSource], list[Path]]:
        """Every log under the roots, and the roots whose walk failed
        (``indexer.logs.watch_roots``)."""
        return discover_roots(self.roots, self._layout, self._note)

    def _layout(self, root: Path) -> TreeFormat | None:
        """The agent layout of a root directory, probed once (``forget_layouts`` asks
        again); a root that is a file has none."""
        if root not in self._layouts:
            self._layouts[root] = tree_format(root) if root.is_dir() else None
        return self._layouts[root]

    def forget_layouts(self) -> None:
        """Probe the roots' layouts again at the next walk (a root may have changed)."""
        self._layouts.clear()

    def _note(self, path: str, reason: str) -> None:
        """Remember why ``path`` is not read; say it once (``reason`` names the path)."""
        self.rejected[path] = reason
        if path not in self._noted:
            self._noted.add(path)
            log.warning("%s", reason)

    def scan(
        self, found: tuple[dict[Key, LogSource], list[Path]] | None = None
    ) -> Iterator[Emitted]:
        """Walk every root (or take ``found``, a ``discover()`` result) now, and emit
        what changed as the records are taken (module docstring)."""
        sources, failed = found if found is not None else self.discover()
        changed = [sources[k] for k in sorted(sources) if self._changed(k)]
        self.pending = len(changed)
        return self._scanning(changed, sources, failed)

    def _scanning(
        self, changed: list[LogSource], sources: dict[Key, LogSource], failed: list[Path]
    ) -> Iterator[Emitted]:
        for source in changed:
            self.pending -= 1
            yield from self._scan_file(source)
        deletes, self._deletes = self._deletes, {}
        unlisted = {k[0] for k, s in sources.items() if s.format == "aider" and s.section is None}
        for key in [k for k in self._files if k not in sources]:
            if any(key[0].is_relative_to(root) for root in failed) or key[0] in unlisted:
                continue  # its root could not be walked, its history listed: not deleted
            deletes.update(self._vanished(key))
        yield from self._delete_records(deletes)

    def scan_paths(self, changed: Iterable[Path]) -> tuple[Iterator[Emitted], bool]:
        """Read the tracked logs among ``changed`` again (as the records are taken);
        True as the second value when a changed path is not a tracked log (a new file, a
        directory, a rename): the roots need a walk (``scan``) to see what it is."""
        deletes, self._deletes = self._deletes, {}
        walk = False
        reads: list[LogSource] = []
        by_path: dict[Path, list[Key]] = {}
        for key, tracked in self._files.items():
            if tracked.source is not None:
                by_path.setdefault(key[0], []).append(key)
        for path in sorted(set(changed)):
            keys = by_path.get(path)
            if keys is None:
                placed = self._place(path)
                if placed is None:
                    walk = walk or may_be_a_log(path, self._files)
                for source in placed or ():
                    known = self._files.get(source.key)
                    if known is None or known.source is None:
                        reads.append(source)
                continue
            if not os.path.lexists(path):
                for key in keys:
                    deletes.update(self._vanished(key))
                continue
            reads.extend(self._again(path, keys, deletes))
        self.pending = len(reads)
        return self._reading(reads, self._delete_records(deletes)), walk

    def _again(self, path: Path, keys: list[Key], deletes: dict[str, str]) -> list[LogSource]:
        """The sources of a tracked file to read again: the file, or an Aider history's
        sessions as it holds them now (one appended is read at once; one gone is
        deleted, unless the history could not be listed)."""
        source = self._files[keys[0]].source
        assert source is not None
        if source.format != "aider":
            return [source]
        now = file_sources(path, "aider")
        if all(s.section is not None for s in now):
            current = {s.key for s in now}
            for key in keys:
                if key not in current:
                    deletes.update(self._vanished(key))
        return now

    def _reading(self, reads: list[LogSource], then: list[Emitted]) -> Iterator[Emitted]:
        for source in reads:
            self.pending -= 1
            yield from self._scan_file(source)
        yield from then

    def _changed(self, key: Key) -> bool:
        """Whether a log's signature differs from the one it was read at (or it was
        never read); a log that cannot be stat'ed is left to its read."""
        tracked = self._files.get(key)
        if tracked is None:
            return True
        try:
            return file_signature(os.stat(key[0])) != tracked.signature
        except OSError:
            return True

    def _place(self, path: Path) -> list[LogSource] | None:
        """The logs a new path adds, when its root's layout says so from the path alone
        (``indexer.logs.placement``); None: a walk must tell."""
        for root in self.roots:
            if path.is_relative_to(root.path):
                has_logs = any(k[0].is_relative_to(root.path) for k in self._files)
                return place(
                    root.path, self._layout(root.path), root.format, path, has_logs=has_logs
                )
        return None

    def _vanished(self, key: Key) -> dict[str, str]:
        self._rewound.discard(key)
        tracked = self._files.pop(key)
        name = tracked.source.name if tracked.source is not None else str(key[0])
        self.rejected.pop(name, None)
        self._noted.discard(name)
        if tracked.session_id is None:
            return {}
        sid = tracked.session_id
        return {sid: self._keys.pop(sid, f"session:{sid}")}

    def _delete_records(self, deletes: dict[str, str]) -> list[Emitted]:
        self._emitted_deletes = deletes
        return [
            Emitted(key, DeleteRecord(v=1, kind="delete", session_id=sid))
            for sid, key in deletes.items()
        ]

    # ---- state ---------------------------------------------------------------------------------
    def seed(
        self, source: LogSource, session_id: str, key: str, next_seq: int, signature: Signature
    ) -> None:
        """Track ``source`` as read up to ``next_seq`` at ``signature`` (a stored state):
        it is read again only once its signature differs, and then emitted whole, header
        first, so the store can tell an appended log (its prefix is an identical
        re-delivery) from a rewritten one (a conflict)."""
        self._files[source.key] = _Tracked(signature, session_id, next_seq, True, source, True)
        self._keys[session_id] = key

    def sources(self) -> dict[str, tuple[Path, int]]:
        """Session id -> (log file, next seq emitted) of every log the last scans read."""
        return {
            t.session_id: (key[0], t.next_seq)
            for key, t in self._files.items()
            if t.session_id is not None
        }

    def rewound(self) -> bool:
        """Whether a ``rewind`` left something to emit again (``retry`` emits it)."""
        return bool(self._deletes) or bool(self._rewound)

    def retry(self) -> Iterator[Emitted]:
        """Emit again what ``rewind`` asked for: its logs read again, its deletes."""
        return self.scan_paths(sorted({key[0] for key in self._rewound}))[0]

    def unread(self) -> set[Path]:
        """Present logs whose session is not known (rejected or unreadable so far)."""
        return {key[0] for key, t in self._files.items() if t.session_id is None}

    def rewind(self, session_ids: Iterable[str]) -> None:
        """Emit these sessions again on the next scan: what was emitted for them was not
        applied (a failed record or a lost batch). A log still present is read again
        from its header (the store drops what it already holds: identical
        re-deliveries are no-ops); a removed log's delete record is sent again."""
        wanted = set(session_ids)
        for key, tracked in self._files.items():
            if tracked.session_id in wanted:
                tracked.signature, tracked.next_seq, tracked.resend_header = _UNREAD, 0, True
                tracked.tail = None
                self._rewound.add(key)
        for sid, routing in self._emitted_deletes.items():
            if sid in wanted:
                self._deletes[sid] = routing

    # ---- one log -------------------------------------------------------------------------------
    def _scan_file(self, source: LogSource) -> Iterator[Emitted]:
        """The records of what changed in one log, read as they are taken: a header
        record first when the whole log is emitted, then its new events in records of
        at most ``max_record_bytes``; the last one is ``final``."""
        path, name = source.path, source.name
        self._rewound.discard(source.key)
        tracked = self._files.setdefault(source.key, _Tracked())
        tracked.source = source
        try:
            st = os.stat(path)
        except OSError:
            return
        if not stat.S_ISREG(st.st_mode):
            self._note(name, f"{path}: skipped: not a regular file")
            return
        signature = file_signature(st)
        if signature == tracked.signature:
            return
        if tracked.session_id is not None and signature[0] < tracked.signature[0]:
            tracked.from_start = True  # it shrank: not an append, emit it whole again
        tracked.signature = signature
        tail, tracked.tail = tracked.tail, None
        resume = None
        if tail is not None and not (tracked.from_start or tracked.resend_header):
            resume = tail.resume(path, st)
        pieces = None
        if source.format == "dsh":
            pieces = LogPieces(path, max_events=self.piece_events, resume=resume)
        last: Emitted | None = None  # held back: the last record of the log is final
        read = 0
        try:
            for piece in read_source_pieces(source, pieces=pieces):
                read += 1
                for item in self._records(tracked, piece, path, signature, read == 1):
                    if last is not None:
                        yield last
                    last = item
        except LogRejectedError as exc:
            if self.rejected.get(name) != str(exc):
                log.warning("skipping %s", exc)
            self.rejected[name] = str(exc)
            # Reading again from the old tail is safe: what went out since is skipped.
            tracked.tail = Tail.after(path, pieces, st, resume is not None, read) or (
                tail if resume is not None else None
            )
            if last is not None:
                yield last
            return
        except (OSError, RecursionError) as exc:
            self.rejected[name] = f"{path}: cannot read: {exc}"
            if last is not None:
                yield last
            return
        except Exception as exc:  # a reader's failure is this log's alone
            why = f"{path}: cannot read: {type(exc).__name__}: {exc}"
            if self.rejected.get(name) != why:
                log.warning("skipping %s", why)
            self.rejected[name] = why
            if last is not None:
                yield last
            return
        self.rejected.pop(name, None)
        tracked.tail = Tail.after(path, pieces, st, resume is not None, read)
        if last is not None:
            last.final = True
            yield last

    def _records(
        self,
        tracked: _Tracked,
        piece: SessionLog,
        path: Path,
        signature: Signature,
        first: bool,
    ) -> Iterator[Emitted]:
        header = piece.header
        key = header.routing_key
        name = tracked.source.name if tracked.source is not None else str(path)
        if first:
            tracked.whole = (
                tracked.from_start or tracked.resend_header or tracked.session_id != header.id
            )
            if tracked.from_start:
                tracked.next_seq, tracked.from_start, tracked.resend_header = 0, False, True
            if tracked.session_id != header.id or tracked.resend_header:
                if tracked.session_id != header.id:
                    tracked.session_id, tracked.next_seq = header.id, 0
                tracked.resend_header = False
                self._keys[header.id] = key
                head = HeaderRecord(v=1, kind="header", header=header.to_json())
                yield Emitted(key, head, 0, path, signature, whole=tracked.whole, log=name)
        fresh = [e for e in piece.events if e.seq >= tracked.next_seq]
        for batch in event_batches(fresh, self.max_record_bytes):
            record = EventsRecord(
                v=1, kind="events", session_id=header.id, events=[e.obj for e in batch]
            )
            tracked.next_seq = max(tracked.next_seq, batch[-1].seq + 1)
            yield Emitted(
                key, record, len(batch), path, signature, whole=tracked.whole, log=name
            )
