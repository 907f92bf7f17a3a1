"""A data dir holding Claude Code subagents under the ids of an older release
(``<parent id>:agent-<agent id>``) is migrated when the writer opens it: the children
get the name-based ids the importer writes now, links and the index follow, and a
re-import of the same logs is a no-op."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson

from indexer.store.layout import sqlite_path
from indexer.store.records.store import Store
from tests.fixtures.importers import CC_CHILD, CC_MAIN, CLAUDE_PROJECTS, Tools, ingest
from worker.tools.access import Caller

OLD_CHILD = f"{CC_MAIN}:agent-a1b2c3d4"


def _age(data: Path) -> None:
    """Give the dir the ids an older release wrote, and forget the migration ran."""
    conn = sqlite3.connect(sqlite_path(data))
    with conn:
        (header,) = conn.execute("SELECT header FROM sessions WHERE id = ?", (CC_CHILD,)).fetchone()
        aged = {**orjson.loads(header), "id": OLD_CHILD}
        conn.execute(
            "UPDATE sessions SET id = ?, header = ? WHERE id = ?",
            (OLD_CHILD, orjson.dumps(aged).decode(), CC_CHILD),
        )
        conn.execute("DELETE FROM meta WHERE key = 'subagent_ids'")
    conn.close()


async def test_old_subagent_ids_are_renamed_when_the_writer_opens_the_dir(tmp_path: Path) -> None:
    data = tmp_path / "data"
    ingest(data, CLAUDE_PROJECTS)
    _age(data)
    Store(data).close()  # the writer opens the dir: migration, then the index rebuild
    tools = Tools(data)
    try:
        assert tools.service.get_session(OLD_CHILD) is None
        child = tools.service.get_session(CC_CHILD)
        assert child is not None and child.header.id == CC_CHILD
        trace = await tools.text("session_trace", {"session_id": CC_MAIN}, CC_MAIN)
        assert f"- {CC_CHILD} — " in trace and OLD_CHILD not in trace
        found = await tools.pipeline.call(
            "session_event_search", {"query": "SUBAGENT_GUAVA"}, Caller(CC_CHILD, step_seq=10**9)
        )
        assert "| assistant/message | current |" in found.text, found.text
    finally:
        tools.close()
    again = ingest(data, CLAUDE_PROJECTS)
    assert again.rejected == [] and again.sessions == 0 and again.unchanged == 6
