"""The committed data dir of an older release (``tests/data/store-v1``) and what the tools
answered over it, for the in-place migration test (``test_store_migration.py``).

``python -m tests.indexer.store_fixture`` rewrites the fixture with the code of the
checkout it runs in: run it only from a checkout of the release whose format the fixture
pins (schema version 1: ``git worktree add /tmp/v1 50deb26``), never from a newer one.

The data dir holds a few real sessions (lineage across workspaces, both compaction
``replace`` operations, older message shapes, packed chunk rows, an empty
session, sessions without a cwd) applied by ``build``: the logs by ``ingest_files``, then
records as the Kafka indexer applies them (a lifecycle record, an appended events record,
a seq-gap record that holds its session), a watched source and stored offsets.
``outputs`` is everything a reader sees: every golden tool call, windows and traces of
the events, the event listings, titles and the stats counts.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import sys
from pathlib import Path
from typing import Any, Final

from indexer.errors import RecordRejectedError
from indexer.logs.reader import read_log
from indexer.model.records import EventsRecord, LifecycleRecord
from indexer.query.service import StoreQueryService
from indexer.redact import DEFAULT, Redaction
from indexer.sources.files import ingest_files
from indexer.stats import store_stats
from indexer.store.records.store import Store
from tests.builders import plain, user
from tests.data_paths import CORPUS_DIR, DATA_DIR
from worker.calls.pipeline import Pipeline
from worker.tools.access import Caller

FIXTURE: Final = DATA_DIR / "store-v1"
FIXTURE_DATA: Final = FIXTURE / "data"
FIXTURE_OUTPUTS: Final = FIXTURE / "outputs.json"
OFFSETS: Final = {("sessionq.events", 0): 4242, ("sessionq.events", 2): 17}

# Corpus logs (file names in shared/corpus/dsh) the fixture holds.
LOGS: Final = (
    "examples__acp-agent__advanced-toolchain__session.jsonl",  # 1111…, lineage root
    "examples__acp-agent__advanced-toolchain__session.1.jsonl",  # 2222…, its child
    "examples__acp-agent__subagent-depth-two-rejection__session.2.jsonl",  # grandchild
    "examples__acp-agent__agent-instructions__session.jsonl",  # 4d8b…, seq 17 replaces 5
    "examples__acp-agent__error-finish__session.jsonl",
    "examples__acp-agent__repeat-tool-reminder__session.jsonl",
    "examples__headless-agent__advanced-toolchain__session.1.jsonl",  # child, other cwd
    "examples__headless-agent__compaction-recovery__session.jsonl",  # dde2…, 21 replaces 4
    "examples__headless-agent__ralph-loop__session.jsonl",
    "apps__web__fresh-round-trip__session.jsonl",  # older shapes, packed chunk rows
    "apps__web__plan-narrow-viewport__session.jsonl",  # a header without events
    "examples__headless-agent__subagent-inheritance-snapshots__parent-override__child"
    ".replay.jsonl",  # no cwd
    "examples__headless-agent__subagent-settlement__child.replay.jsonl",  # no cwd
    "scripts__python-sdk-single-exe__advanced__session.1.jsonl",  # parent not stored
)
LIVE: Final = "4d8b12e4-980a-5187-a39c-13f2d3db8cca"
APPENDED: Final = "ffe678e2-6b6b-50fc-8228-48c56dacd3fd"  # gets two more events by record
HELD: Final = "bce16d74-14fd-5465-94c0-33ba5bf0f4ae"  # a seq-gap record holds it
WATCHED: Final = "2acbeda7-113a-5afa-9b65-82fdcac04c72"


def log_paths() -> list[Path]:
    return [CORPUS_DIR / name for name in LOGS]


def _appended_events(next_seq: int, time: int) -> list[dict[str, Any]]:
    return [
        plain(next_seq, "turn/start", {"turn": 90}, time=time),
        user(next_seq + 1, "an appended needle", time=time + 1, msg_id="appended-message"),
    ]


def build(data_dir: Path, redaction: Redaction = DEFAULT) -> None:
    """Write the fixture's data dir with the code of this checkout (see the docstring)."""
    store = Store(data_dir, redaction=redaction)
    try:
        summary = ingest_files(store, log_paths())
        assert not summary.rejected, summary.rejected
        last = read_log(CORPUS_DIR / LOGS[4]).events[-1]
        store.apply(
            EventsRecord(
                v=1,
                kind="events",
                session_id=APPENDED,
                events=_appended_events(last.seq + 1, last.time + 10),
            )
        )
        store.apply(LifecycleRecord(v=1, kind="lifecycle", session_id=LIVE, live=True))
        held_next = len(read_log(CORPUS_DIR / LOGS[5]).events)
        try:
            store.apply(
                EventsRecord(
                    v=1,
                    kind="events",
                    session_id=HELD,
                    events=_appended_events(held_next + 5, 1_900_000_000_000),
                )
            )
        except RecordRejectedError:
            pass  # expected: the gap holds the session
        else:
            raise AssertionError("the gap record was accepted")
        store.tables.set_watched_source(WATCHED, "/watched/" + LOGS[9])
        store.commit(OFFSETS)
    finally:
        store.close()


def _calls() -> list[tuple[str, str, dict[str, Any], str, int | None]]:
    """(name, tool, arguments, caller, step seq): the golden cases, then a window of
    ±2 around every third event and a trace of every event (and of one seq past the
    end), asked by the session itself."""
    from tests.worker.test_golden_corpus import CASES

    calls = [(c.name, c.tool, c.arguments, c.caller, c.step_seq) for c in CASES]
    for path in log_paths():
        log = read_log(path)
        sid = log.header.id
        seqs = [e.seq for e in log.events] + ([log.events[-1].seq + 1] if log.events else [0])
        for seq in seqs:
            args = {"session_id": sid, "seq": seq}
            if seq % 3 == 0 or seq == seqs[-1]:
                window = {**args, "before": 2, "after": 2}
                calls.append((f"read {sid} {seq}", "session_event_read", window, sid, None))
            calls.append((f"trace {sid} {seq}", "session_event_trace", args, sid, None))
        calls.append((f"session trace {sid}", "session_trace", {}, sid, None))
    return calls


def outputs(data_dir: Path) -> dict[str, Any]:
    """Everything the tools and the query service answer over ``data_dir``."""
    service = StoreQueryService(data_dir)
    try:
        pipeline = Pipeline(service)

        async def run_all() -> dict[str, str]:
            out: dict[str, str] = {}
            for name, tool, args, caller, step in _calls():
                reply = await pipeline.call(tool, args, Caller(caller, step))
                if reply.error is not None:
                    out[name] = f"{reply.error.code}: {reply.error.message}"
                else:
                    assert reply.output is not None
                    out[name] = reply.output
            return out

        replies = asyncio.run(run_all())
        ids = [read_log(p).header.id for p in log_paths()]
        events = {
            sid: [[e.seq, e.type, e.time, e.surface] for e in service.list_events(sid)]
            for sid in ids
        }
        titles = [
            [t.session_id, None if t.title is None else t.title.title, t.error is not None]
            for t in service.read_title_snapshots(ids)
        ]
        steps = {sid: service.last_step_start_seq(sid) for sid in ids}
        last = {sid: service.last_seq(sid) for sid in ids}
    finally:
        service.close()
    stats = store_stats(data_dir).to_json()
    # Sizes change with the layout; the per-agent counts came after the fixture's release
    # (issue 12: the migration test checks them on their own).
    for key in ("sqlite_bytes", "index_bytes", "agents", "redaction", "redactions"):
        stats.pop(key, None)
    return {
        "replies": replies,
        "events": events,
        "titles": titles,
        "last_step_start": steps,
        "last_seq": last,
        "stats": stats,
    }


def main() -> int:
    shutil.rmtree(FIXTURE_DATA, ignore_errors=True)
    FIXTURE_DATA.mkdir(parents=True)
    build(FIXTURE_DATA)
    # A self-contained database file (rollback journal, no WAL); the release that opens
    # it next turns WAL on again.
    conn = sqlite3.connect(FIXTURE_DATA / "store.sqlite3", isolation_level=None)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    FIXTURE_OUTPUTS.write_text(
        json.dumps(outputs(FIXTURE_DATA), indent=1, ensure_ascii=False, sort_keys=True) + "\n"
    )
    assert not list(FIXTURE_DATA.glob("store.sqlite3-*"))
    print(f"wrote {FIXTURE}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
